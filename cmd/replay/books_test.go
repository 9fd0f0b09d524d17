package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/venue"
	"go.uber.org/goleak"
)

// booksOutput is the JSON contract of `replay books`.
type booksOutput struct {
	Books []struct {
		Venue      string      `json:"venue"`
		Instrument string      `json:"instrument"`
		Valid      bool        `json:"valid"`
		Crossed    bool        `json:"crossed"`
		Estimated  *bool       `json:"estimated"`
		Bids       [][2]string `json:"bids"`
		Asks       [][2]string `json:"asks"`
		Hash       struct {
			Checked *uint64 `json:"checked"`
			OK      *uint64 `json:"ok"`
		} `json:"hash"`
	} `json:"books"`
}

// TestBooksMatchesRESTSummary replays the real polypy 2025-10 frames (a book
// and two price_change frames) and checks that `replay books --format json`
// at each price_change prints exactly the levels of the REST summary the
// venue served right after it, as the same decimal strings.
func TestBooksMatchesRESTSummary(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := fixtureDataset(t, venue.Polymarket, "polypy_hash_vector_ws_2025-10.ndjson")
	data, err := os.ReadFile(filepath.Join("..", "..", "replayer", "testdata", "polypy_hash_vector_rest_book_summaries_2025-10.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rest struct {
			AssetID    string `json:"asset_id"`
			Bids, Asks []struct{ Price, Size string }
		}
		if err := json.Unmarshal(line, &rest); err != nil {
			t.Fatal(err)
		}
		at := strconv.FormatInt(fixtureBaseNs+int64(i+1)*int64(time.Millisecond), 10)
		code, out, errs := execReplay(t, "books", "--format", "json", "--at", at, "--instrument", rest.AssetID, dir)
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got booksOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(got.Books) != 1 {
			t.Fatalf("books: %s", out)
		}
		b := got.Books[0]
		if b.Venue != "polymarket" || b.Instrument != rest.AssetID || !b.Valid || b.Crossed ||
			b.Hash.Checked == nil || b.Hash.OK == nil {
			t.Fatalf("book header: %s", out)
		}
		// REST lists bids ascending and asks descending: the best level last.
		var wantBids, wantAsks [][2]string
		for _, l := range rest.Bids {
			wantBids = append(wantBids, [2]string{l.Price, l.Size})
		}
		for _, l := range rest.Asks {
			wantAsks = append(wantAsks, [2]string{l.Price, l.Size})
		}
		slices.Reverse(wantBids)
		slices.Reverse(wantAsks)
		if !slices.Equal(b.Bids, wantBids) || !slices.Equal(b.Asks, wantAsks) {
			t.Fatalf("summary %d:\nbids %v\nwant %v\nasks %v\nwant %v", i, b.Bids, wantBids, b.Asks, wantAsks)
		}
	}
}

func TestBooksOutput(t *testing.T) {
	pm := fixtureDataset(t, venue.Polymarket, "polypy_hash_vector_ws_2025-10.ndjson")
	hl := fixtureDataset(t, venue.Hyperliquid, "order_book_server_ack_l2book_trades_2025-07.ndjson")

	// Two venues: sorted by venue then instrument; --depth cuts each side.
	code, out, errs := execReplay(t, "books", "--depth", "2", pm, hl)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got booksOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("piped output is not JSON: %v\n%s", err, out)
	}
	var keys []string
	for _, b := range got.Books {
		keys = append(keys, b.Venue+"/"+b.Instrument)
		if len(b.Bids) > 2 || len(b.Asks) > 2 || b.Bids == nil || b.Asks == nil {
			t.Errorf("%s: depth 2 printed %d/%d levels", b.Instrument, len(b.Bids), len(b.Asks))
		}
	}
	if !slices.IsSorted(keys) || keys[0] != "hyperliquid/BTC" || !strings.HasPrefix(keys[len(keys)-1], "polymarket/") {
		t.Fatalf("order %v", keys)
	}
	if b := got.Books[0]; b.Bids[0] != [2]string{"106217", "0.001"} || b.Asks[0] != [2]string{"106233", "0.26739"} {
		t.Fatalf("BTC top %v / %v", b.Bids, b.Asks)
	}

	// The table form names the book and prints best-first levels.
	code, out, errs = execReplay(t, "books", "--format", "table", "--instrument", "BTC", "--depth", "1", hl)
	if code != cli.ExitOK || !strings.Contains(out, "hyperliquid BTC: valid") ||
		!strings.Contains(out, "106217") || strings.Contains(out, "106215") {
		t.Fatalf("table (exit %d, %s):\n%s", code, errs, out)
	}

	// An instrument that is not there is a problem naming it (exit 3, as
	// export and backtest).
	code, _, errs = execReplay(t, "books", "--instrument", "ETH", hl)
	if code != cli.ExitProblem || !strings.Contains(errs, "--instrument ETH: nothing printed") {
		t.Fatalf("missing instrument: exit %d, %s", code, errs)
	}
}

func TestBooksFlags(t *testing.T) {
	dir := fixtureDataset(t, venue.Hyperliquid, "order_book_server_ack_l2book_trades_2025-07.ndjson")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		atNs    int64
		format  string
	}{
		{"end is the default", []string{dir}, "", 0, "json"},
		{"relative", []string{"--at", "+1ms", "--format", "table", dir}, "", fixtureBaseNs + int64(time.Millisecond), "table"},
		{"bad format", []string{"--format", "csv", dir}, "--format", 0, ""},
		{"bad depth", []string{"--depth", "-1", dir}, "--depth", 0, ""},
		{"bad at", []string{"--at", "yesterday", dir}, "--at", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *booksOptions
			cmd := newBooksCmd(func(_ context.Context, o *booksOptions) error { got = o; return nil })
			err := executeQuiet(cmd, tc.args)
			if tc.wantErr != "" {
				var fe *cli.FlagError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &fe) {
					t.Fatalf("error %v, want a flag error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.AtNs != tc.atNs || got.Format != tc.format {
				t.Fatalf("at %d format %q", got.AtNs, got.Format)
			}
		})
	}
}

func TestBooksExamples(t *testing.T) { runExamples(t, newBooksCmd(nil).Example) }

// "estimated" is part of the JSON contract: a Hyperliquid book merged with
// bbo since its last l2Book is estimated; right after the snapshot it is not.
func TestBooksEstimated(t *testing.T) {
	hl := fixtureDataset(t, venue.Hyperliquid, "arbitrage_observatory_probe_2026-09_core.ndjson") // ack, l2Book, bbo, …
	for _, c := range []struct {
		at   string
		want bool
	}{{strconv.FormatInt(fixtureBaseNs+int64(time.Millisecond), 10), false}, {"end", true}} {
		code, out, errs := execReplay(t, "books", "--format", "json", "--at", c.at, "--instrument", "BTC", hl)
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got booksOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Books) != 1 || got.Books[0].Estimated == nil || *got.Books[0].Estimated != c.want || !got.Books[0].Valid {
			t.Fatalf("at %s: %s", c.at, out)
		}
	}
}

// TestBooksTableShowsControlCharacters is issue 30 item 18: an instrument
// id from the venue with terminal escape codes was printed raw by the
// table of "replay books" (clear the screen, retitle the terminal); it is
// shown escaped now, and the book is still there.
func TestBooksTableShowsControlCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "test", StartNs: fixtureBaseNs})
	if err != nil {
		t.Fatal(err)
	}
	// Raw in the JSON string: a C1 control (CSI, U+009B) is valid JSON.
	frame := "[{\"event_type\":\"book\",\"asset_id\":\"evil\u009b31mX\",\"market\"" + `:"0xm","timestamp":"1","bids":[{"price":"0.4","size":"10"}],"asks":[{"price":"0.6","size":"10"}]}]`
	if _, err := w.Append(&datasets.Record{Kind: datasets.KindFrame, WallNs: fixtureBaseNs, MonoNs: 1, Payload: []byte(frame)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := execReplay(t, "books", "--format", "table", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\u009b") || !strings.Contains(out, `evil\u009b31mX`) || !strings.Contains(out, "0.4") {
		t.Fatalf("output %q", out)
	}
}
