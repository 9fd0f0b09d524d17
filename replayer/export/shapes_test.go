package export

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// Hyperliquid backfill end to end through the replayer: the recorded
// subscribe (KindSent), its ack, then the real trades frame twice. The first
// is the venue's replay of history: backfill=true in Parquet, left out of the
// Tardis CSV layout, marked in the CSV quality column.
func TestTradesBackfillColumn(t *testing.T) {
	jk := frames(t, "jkorf_trades_2025-12.ndjson") // ack, trades (HYPE)
	recs := []rec{
		ctl(datasets.KindConnect, datasets.Control{URL: "wss://api.hyperliquid.xyz/ws"}),
		{kind: datasets.KindSent, payload: []byte(`{"method":"subscribe","subscription":{"type":"trades","coin":"HYPE"}}`)},
		jk[0], jk[1], jk[1],
	}
	paths := []string{writeDataset(t, venue.Hyperliquid, 0, recs)}

	data, _ := exportOne(t, paths, TableTrades, FormatParquet, 0)
	tb := readArrowTable(t, FormatParquet, data)
	bf := tb.col(t, "backfill")
	if len(tb.rows) != 2 || tb.rows[0][bf] != "true" || tb.rows[1][bf] != "false" {
		t.Fatalf("parquet rows %v", tb.rows)
	}
	data, _ = exportOne(t, paths, TableTrades, FormatTardis, 0)
	if csv := readCSV(t, data); len(csv.rows) != 1 {
		t.Fatalf("Tardis CSV kept %d rows, want the live one", len(csv.rows))
	}
	data, _ = exportOne(t, paths, TableTrades, FormatTardis, 0, WithQualityColumns())
	csv := readCSV(t, data)
	if bf := csv.col(t, "backfill"); len(csv.rows) != 2 || csv.rows[0][bf] != "true" || csv.rows[1][bf] != "false" {
		t.Fatalf("CSV with quality columns: %v", csv.rows)
	}

	// No ack (a proxy that does not acknowledge): the recorded subscribe
	// alone arms it, so the replayer hands KindSent records to the decoder.
	noAck := writeDataset(t, venue.Hyperliquid, 0, []rec{recs[0], recs[1], jk[1], jk[1]})
	data, _ = exportOne(t, []string{noAck}, TableTrades, FormatParquet, 0)
	tb = readArrowTable(t, FormatParquet, data)
	if bf := tb.col(t, "backfill"); len(tb.rows) != 2 || tb.rows[0][bf] != "true" || tb.rows[1][bf] != "false" {
		t.Fatalf("without an ack: %v", tb.rows)
	}
}

// Polymarket best_bid_ask reaches the quotes table as a venue row (the
// venue's prices, no sizes); book rows say source "book". A rejected
// snapshot is a "rejected" row of the events table naming the book it
// invalidated.
func TestBestBidAskAndRejectRows(t *testing.T) {
	misc := frames(t, "nautilus_ws_misc_events.ndjson")
	ws := frames(t, "polypy_hash_vector_ws_2025-10.ndjson")
	bad := rec{kind: datasets.KindFrame, payload: bytes.Replace(ws[0].payload, []byte(`"bids":[`), []byte(`"bids":[{"price":"2","size":"1"},`), 1)}
	paths := []string{writeDataset(t, venue.Polymarket, 0, []rec{ws[0], misc[2], bad})}

	data, _ := exportOne(t, paths, TableQuotes, FormatParquet, 0)
	tb := readArrowTable(t, FormatParquet, data)
	src, bp, ap, bs := tb.col(t, "source"), tb.col(t, "bid_price"), tb.col(t, "ask_price"), tb.col(t, "bid_size")
	var venueRows, bookRows int
	for _, r := range tb.rows {
		switch r[src] {
		case "venue":
			venueRows++
			if r[bp] != "0.73" || r[ap] != "0.77" || r[bs] != "" {
				t.Fatalf("venue row %v", r)
			}
		case "book":
			bookRows++
		}
	}
	if venueRows != 1 || bookRows < 2 { // the snapshot, then invalid after the reject
		t.Fatalf("%d venue and %d book rows: %v", venueRows, bookRows, tb.rows)
	}
	data, _ = exportOne(t, paths, TableQuotes, FormatTardis, 0)
	if csv := readCSV(t, data); len(csv.rows) != bookRows {
		t.Fatalf("Tardis CSV has %d rows, want the %d book rows", len(csv.rows), bookRows)
	}

	data, _ = exportOne(t, paths, TableEvents, FormatParquet, 0)
	ev := readArrowTable(t, FormatParquet, data)
	kind, errc, insts := ev.col(t, "kind"), ev.col(t, "error"), ev.col(t, "instruments")
	var rejected int
	for _, r := range ev.rows {
		if r[kind] == "rejected" {
			rejected++
			if !bytes.Contains([]byte(r[errc]), []byte("bids[0].price")) || r[insts] == "" {
				t.Fatalf("rejected row %v", r)
			}
		}
	}
	if rejected != 1 {
		t.Fatalf("%d rejected rows: %v", rejected, ev.rows)
	}
}

// capsOf records the capabilities of the driver the events carry.
type capsOf struct{ caps *venue.Capabilities }

func (c capsOf) OnEvent(e *replayer.Event) error {
	if e.Driver != nil && c.caps != nil {
		*c.caps = e.Driver.Capabilities()
	}
	return nil
}

// The depth table's hash verdict columns follow the venue's capabilities:
// present, in every format and in the Tardis quality columns, for a venue
// whose books carry hashes, absent for one whose books do not (with no
// column left empty or false forever).
func TestHashColumnsFollowCapabilities(t *testing.T) {
	hashCols := []string{"hash_checked", "hash_ok", "hash_mismatch", "hash_unverifiable"}
	seen := map[bool]bool{}
	for _, ds := range testDatasets {
		t.Run(ds.name, func(t *testing.T) {
			var caps venue.Capabilities
			var pq, tardis bytes.Buffer
			ps := sinkTo(t, &pq, TableDepth, FormatParquet, WithLevels(2))
			ts := sinkTo(t, &tardis, TableDepth, FormatTardis, WithLevels(2), WithQualityColumns())
			replay(t, ds.paths(t), capsOf{&caps}, ps, ts)
			for _, s := range []*Sink{ps, ts} {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			seen[caps.BookHashes] = true
			p := readArrowTable(t, FormatParquet, pq.Bytes())
			c := readCSV(t, tardis.Bytes())
			for _, cols := range [][]string{p.cols, c.cols} {
				for _, h := range hashCols {
					if slices.Contains(cols, h) != caps.BookHashes {
						t.Errorf("book hashes %v: column %s present %v in %v", caps.BookHashes, h, !caps.BookHashes, cols)
					}
				}
				if !slices.Contains(cols, "estimated") || !slices.Contains(cols, "crossed") {
					t.Errorf("flags missing: %v", cols)
				}
			}
		})
	}
	if !seen[true] || !seen[false] {
		t.Fatalf("the test datasets cover book hashes %v only", seen)
	}
}
