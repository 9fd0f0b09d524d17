package datasets

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestInspectListsLiveRecords: the live engine's records are listed with
// their instruments and "reason: text" detail; they are not losses, and
// neither is a connection's clean close.
func TestInspectListsLiveRecords(t *testing.T) {
	recs := genRecords(t, 50, int64(time.Millisecond))
	last := recs[len(recs)-1]
	add := func(k Kind, c Control) {
		last.WallNs++
		last.MonoNs++
		recs = append(recs, Record{Kind: k, Conn: 1, WallNs: last.WallNs, MonoNs: last.MonoNs, Payload: EncodeControl(c)})
	}
	add(KindIntegrity, Control{Instruments: []string{"tok"}, Reason: CheckHashMismatch, Text: "book hash mismatch at record 7"})
	add(KindResubscribe, Control{Instruments: []string{"tok"}, Reason: CheckHashMismatch, Attempt: 1})
	add(KindLiveLag, Control{Dropped: 9, FromNs: 1, ToNs: 2, Text: "live engine fell behind"})
	add(KindCleanClose, Control{Code: 1000, Reason: "shutdown"})
	dir := filepath.Join(t.TempDir(), "ds")
	writeRecords(t, dir, recs)
	info, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Live) != 3 {
		t.Fatalf("live records %+v", info.Live)
	}
	if l := info.Live[0]; l.Kind != "integrity" || l.Detail != "hash_mismatch: book hash mismatch at record 7" || !slices.Equal(l.Instruments, []string{"tok"}) {
		t.Errorf("integrity entry %+v", l)
	}
	if l := info.Live[1]; l.Kind != "resubscribe" || l.Detail != "hash_mismatch" {
		t.Errorf("resubscribe entry %+v", l)
	}
	if l := info.Live[2]; l.Kind != "live_lag" || l.Dropped != 9 || l.FromNs != 1 || l.ToNs != 2 {
		t.Errorf("live_lag entry %+v", l)
	}
	for _, l := range info.Losses {
		if l.Kind == "integrity" || l.Kind == "resubscribe" || l.Kind == "live_lag" || l.Kind == "clean_close" {
			t.Errorf("%s listed as a loss", l.Kind)
		}
	}
}
