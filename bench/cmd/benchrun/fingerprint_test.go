package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSuiteFingerprint(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bench/x_test.go", "package bench")
	write("bench/gate.go", "package bench")
	write("bench/testdata/peers/a.json", "{}")
	fp := func(frames int64) string {
		t.Helper()
		s, err := suiteFingerprint(root, frames)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := fp(1000)
	if fp(1000) != a {
		t.Fatal("the fingerprint is not deterministic")
	}
	write("bench/gate.go", "package bench // tooling change")
	write("bench/testdata/reports/r.json", "{}")
	if fp(1000) != a {
		t.Fatal("tooling or recorded reports changed the suite fingerprint")
	}
	if fp(2000) == a {
		t.Fatal("a larger generated input kept the suite fingerprint")
	}
	for _, p := range []string{"bench/x_test.go", "bench/testdata/peers/a.json"} {
		write(p, "changed")
		if b := fp(1000); b == a {
			t.Fatalf("changing %s kept the suite fingerprint", p)
		} else {
			a = b
		}
	}
}
