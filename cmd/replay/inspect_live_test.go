package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/recorder/fakeexchange"
)

// TestInspectShowsLiveRecords is issue 11 item 4's "replay reports these
// records in replay inspect", end to end: a loopback capture in which the
// test exchange sends one book whose hash does not match, so the live
// engine writes an integrity record and heals the book with a resubscribe.
// `replay inspect` lists both under "live engine", naming the instrument
// and the check, in the text and in --json.
func TestInspectShowsLiveRecords(t *testing.T) {
	s := fakeexchange.New(fakeexchange.PolymarketHashConfig())
	defer s.Close()
	asset := fakeexchange.PolymarketHashAsset
	sentBad := false
	dir := captureFrom(t, s, recorder.Spec{Venue: "polymarket", CLOBEndpoint: s.CLOBURL(), Instruments: []string{asset}}, func() bool {
		if !sentBad {
			if live := s.Live(); len(live) == 0 || live[0].SentCount() == 0 {
				return false
			}
			good := s.Conns()[0].Sent()[0]
			i := strings.Index(string(good), `"hash":"`) + len(`"hash":"`)
			bad := []byte(string(good))
			bad[i] = "01"[min(int(bad[i]-'0'), 1)^1] // another hex digit
			s.SendAll(bad)
			sentBad = true
			return false
		}
		// The good book, the bad one, the book the resubscribe brought.
		return sentContaining(s, `"event_type":"book"`) >= 3
	})

	code, out, errs := execReplay(t, "inspect", "--format", "table", dir)
	if code != cli.ExitOK {
		t.Fatalf("inspect: exit %d, %s", code, errs)
	}
	_, section, ok := strings.Cut(out, "live engine (")
	if !ok {
		t.Fatalf("no live engine section:\n%s", out)
	}
	for _, want := range []string{"integrity", "resubscribe", asset[:20], "hash"} {
		if !strings.Contains(section, want) {
			t.Errorf("live engine section lacks %q:\n%s", want, section)
		}
	}

	code, out, errs = execReplay(t, "inspect", "--json", dir)
	if code != cli.ExitOK {
		t.Fatalf("inspect --json: exit %d, %s", code, errs)
	}
	var info struct {
		Live []struct {
			Kind        string   `json:"kind"`
			Detail      string   `json:"detail"`
			Instruments []string `json:"instruments"`
		} `json:"live"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kinds := map[string]int{}
	for _, l := range info.Live {
		kinds[l.Kind]++
		if (l.Kind == "integrity" || l.Kind == "resubscribe") && !slices.Equal(l.Instruments, []string{asset}) {
			t.Errorf("%s record names %v, want %s", l.Kind, l.Instruments, asset)
		}
		if l.Kind == "integrity" && !strings.Contains(l.Detail, "hash") {
			t.Errorf("integrity record detail %q does not say which check", l.Detail)
		}
	}
	if kinds["integrity"] != 1 || kinds["resubscribe"] != 1 {
		t.Errorf("live records %v, want one integrity and one resubscribe: %s", kinds, out)
	}
}
