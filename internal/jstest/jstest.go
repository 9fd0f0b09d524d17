// Package jstest finds Node and the npm packages tests/js installs, for
// the tests that drive real JavaScript clients (the venues' SDKs, DuckDB,
// Arrow) against tapedeck's servers and outputs.
package jstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the tests/js directory of the repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "js")
}

// Node returns the node binary, the tests/js directory and the flags node
// needs (Node 20 has its WebSocket client behind --experimental-websocket;
// later versions have it on), or skips t when node or one of pkgs (npm
// package names, "@scope/name") is not installed.
func Node(t testing.TB, pkgs ...string) (bin, dir string, flags []string) {
	t.Helper()
	dir = Dir()
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p))); err != nil {
			t.Skipf("tests/js/node_modules/%s missing: run `cd tests/js && npm ci` (make test does)", p)
		}
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if exec.Command(bin, "--experimental-websocket", "-e", "0").Run() == nil {
		flags = append(flags, "--experimental-websocket")
	}
	return bin, dir, flags
}
