package report_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/report"
)

// TestBuildOnTheSample: on the shipped Polymarket sample (one disconnect,
// one reconnect) the buckets add up to Inspect's frames per connection,
// the connection is down from its disconnect to its next connect, every
// instrument of it has a book-invalid stretch starting at the disconnect,
// and the HTML carries the figures.
func TestBuildOnTheSample(t *testing.T) {
	ds := filepath.Join("..", "..", "datasets", "samples", "polymarket")
	rep, err := report.Build(context.Background(), []string{ds}, report.Options{Buckets: 100, Replay: []replayer.Option{replayer.WithHashCheck(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReplayErr != "" || len(rep.Datasets) != 1 || rep.Buckets != 100 {
		t.Fatalf("report: %+v", rep)
	}
	d := rep.Datasets[0]
	var disc, conn int64
	for _, l := range d.Info.Losses {
		if l.Kind == "disconnect" {
			disc = l.WallNs
		}
	}
	rd, err := datasets.Open(ds)
	if err != nil {
		t.Fatal(err)
	}
	for rd.Next() {
		if r := rd.Record(); r.Kind == datasets.KindConnect && r.WallNs > disc && conn == 0 && disc != 0 {
			conn = r.WallNs
		}
	}
	rd.Close()
	if disc == 0 || conn == 0 {
		t.Fatalf("the sample has no disconnect and reconnect (%d, %d)", disc, conn)
	}
	var total uint64
	for _, c := range d.Conns {
		var n uint64
		for _, f := range c.Frames {
			n += f
		}
		if n != c.Info.Frames {
			t.Errorf("conn %d: buckets hold %d frames, Inspect %d", c.Conn, n, c.Info.Frames)
		}
		total += n
		if c.Info.Frames > 0 && (len(c.Down) != 1 || c.Down[0].FromNs != disc || c.Down[0].ToNs != conn) {
			t.Errorf("conn %d down %+v, want [%d, %d]", c.Conn, c.Down, disc, conn)
		}
	}
	if total != d.Info.ByKind["frame"] {
		t.Errorf("%d frames in buckets, %d in the dataset", total, d.Info.ByKind["frame"])
	}
	if len(rep.Instruments) == 0 {
		t.Fatal("no instruments")
	}
	var checked uint64
	for _, in := range rep.Instruments {
		checked += in.Quality.HashChecked
		if len(in.Invalid) == 0 || in.Invalid[0].FromNs != disc || in.Invalid[0].ToNs <= disc {
			t.Errorf("%s: invalid stretches %+v, want one from the disconnect at %d", in.Instrument, in.Invalid, disc)
		}
	}
	if checked != rep.Summary.HashChecked || checked == 0 {
		t.Errorf("instruments checked %d hashes, the summary %d", checked, rep.Summary.HashChecked)
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg class="timeline"`, `class="down"`, `class="invalid"`, `<td data-f="kind">disconnect</td>`} {
		if !bytes.Contains(html.Bytes(), []byte(want)) {
			t.Errorf("HTML lacks %s", want)
		}
	}
}
