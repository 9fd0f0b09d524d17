package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVerifyFindsOrderProblems(t *testing.T) {
	recs := genRecords(t, 100, int64(time.Millisecond))
	t.Run("mono backwards", func(t *testing.T) {
		bad := append([]Record(nil), recs...)
		bad[40].MonoNs = bad[39].MonoNs - 1
		dir := filepath.Join(t.TempDir(), "ds")
		writeRecords(t, dir, bad)
		vr, err := Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(vr.Problems) != 1 || vr.Problems[0].Seq != 41 || !strings.Contains(vr.Problems[0].What, "backwards") {
			t.Fatalf("%+v", vr.Problems)
		}
	})
	t.Run("seq repeats across segments", func(t *testing.T) {
		a := filepath.Join(t.TempDir(), "a")
		writeRecords(t, a, recs)
		b := filepath.Join(t.TempDir(), "b")
		writeRecords(t, b, recs)
		// b's segment 1 (seq 1..100) becomes a's segment 2.
		data, _ := os.ReadFile(filepath.Join(b, segmentName(1)))
		if err := os.WriteFile(filepath.Join(a, segmentName(2)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		vr, err := Verify(a)
		if err != nil {
			t.Fatal(err)
		}
		// One problem per discontinuity: seq and mono restart at the copy's
		// first record, and the copy's header names segment 1.
		var what []string
		for _, p := range vr.Problems {
			what = append(what, p.What)
		}
		got := strings.Join(what, "\n")
		for _, w := range []string{"segment header says segment 1", "sequence not strictly increasing: after seq 100", "went backwards"} {
			if !strings.Contains(got, w) {
				t.Errorf("no problem %q in:\n%s", w, got)
			}
		}
		if len(vr.Problems) != 3 || vr.Problems[1].Seq != 1 || len(vr.Warnings) != 1 {
			t.Fatalf("%+v", vr)
		}
	})
	t.Run("missing segment", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ds")
		writeRecords(t, dir, recs, WithBlockSize(4<<10), WithSegmentSize(4<<10))
		if len(segmentPaths(t, dir)) < 3 {
			t.Fatal("want 3+ segments")
		}
		os.Remove(filepath.Join(dir, segmentName(2)))
		vr, err := Verify(dir)
		if err != nil || vr.OK() || !strings.Contains(vr.Problems[0].What, "missing") {
			t.Fatalf("%+v %v", vr, err)
		}
	})
	t.Run("not a dataset", func(t *testing.T) {
		if _, err := Verify(t.TempDir()); err == nil {
			t.Fatal("verify of an empty directory succeeded")
		}
	})
}

func TestInspectAndCatalog(t *testing.T) {
	root := t.TempDir()
	recs := genRecords(t, 1200, int64(time.Millisecond))
	recs = append(recs, Record{Kind: KindGap, Conn: 1, WallNs: recs[len(recs)-1].WallNs + 1, MonoNs: recs[len(recs)-1].MonoNs + 1,
		Payload: EncodeControl(Control{FromNs: 5, ToNs: 9, Dropped: 3, Text: "sequence gap"})})
	writeRecords(t, filepath.Join(root, "poly", "day1"), recs)
	writeRecords(t, filepath.Join(root, "hl"), recs[:10], WithLevel(0))
	if err := os.MkdirAll(filepath.Join(root, "empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(root, "zz-broken")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, ManifestName), []byte("{"), 0o644)

	info, err := Inspect(filepath.Join(root, "poly", "day1"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"frame": 0, "connect": 1, "disconnect": 2, "gap": 1}
	want["frame"] = uint64(len(recs)) - 4
	for k, n := range want {
		if info.ByKind[k] != n {
			t.Errorf("%s: %d, want %d", k, info.ByKind[k], n)
		}
	}
	if info.Records != uint64(len(recs)) || info.StartNs != recs[0].WallNs || info.EndNs != recs[len(recs)-1].WallNs ||
		len(info.Conns) != 3 || info.Conns[0].URL == "" || info.Ratio <= 1 || info.Err != "" {
		t.Fatalf("info %+v", info)
	}
	if len(info.Losses) != 3 || info.Losses[2].Kind != "gap" || info.Losses[2].Dropped != 3 || info.Losses[0].Detail != "abnormal closure" {
		t.Fatalf("losses %+v", info.Losses)
	}
	var raw uint64
	for _, r := range recs {
		raw += uint64(len(r.Payload))
	}
	if info.RawBytes != raw {
		t.Fatalf("raw bytes %d, want %d", info.RawBytes, raw)
	}

	cat, err := Catalog(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, c := range cat {
		dirs = append(dirs, strings.TrimPrefix(c.Dir, root))
	}
	if strings.Join(dirs, ",") != "/hl,/poly/day1,/zz-broken" {
		t.Fatalf("catalog %v", dirs)
	}
	if cat[0].Records != 10 || cat[2].Err == "" {
		t.Fatalf("catalog entries %+v %+v", cat[0], cat[2])
	}
	if _, err := Catalog(filepath.Join(root, "nope")); err == nil {
		t.Fatal("catalog of a missing root succeeded")
	}
}
