package recorder_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

// bareDriver is Polymarket's driver with the core client protocol only (no
// discovery, REST books, listing or mirror) and no application heartbeat:
// what a minimal venue gives the recorder.
type bareDriver struct{ venue.Driver }

func (d bareDriver) Client() venue.ClientProtocol { return bareClient{d.Driver.Client()} }

type bareClient struct{ venue.ClientProtocol }

func (c bareClient) Facts() venue.ClientFacts {
	f := c.ClientProtocol.Facts()
	f.PingInterval, f.PingFrame = 0, nil
	return f
}

// A venue with PingInterval 0 and none of the optional capabilities captures
// from replay serve: it sends no heartbeat, and records the served frames.
func TestCaptureWithoutHeartbeatFromServe(t *testing.T) {
	sample := filepath.Join("..", "datasets", "samples", "polymarket")
	m, err := datasets.ReadManifest(sample)
	if err != nil {
		t.Fatal(err)
	}
	drv := bareDriver{polymarket.Driver}
	if _, ok := drv.Client().(venue.Discoverer); ok {
		t.Fatal("the bare client has discovery")
	}
	srv, err := serve.New([]string{sample}, serve.WithDriver(drv), serve.WithSpeed(replayer.SpeedMax),
		serve.WithSubscribeWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	r, err := recorder.New(recorder.Spec{Endpoint: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws",
		Instruments: m.Instruments[:2], DisableRESTBooks: true}, recorder.WithDriver(drv))
	if err != nil {
		t.Fatal(err)
	}
	enough := make(chan struct{})
	var seqs int
	var last uint64
	r.Subscribe(feed.Key{}, feed.SubscriberFunc(func(e *feed.Event) error {
		if e.Kind == datasets.KindFrame && e.Seq != last {
			last = e.Seq
			if seqs++; seqs == 50 {
				close(enough)
			}
		}
		return nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ds")
	w, err := datasets.Create(path, r.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, w) }()
	select {
	case <-enough:
	case err := <-done:
		t.Fatalf("Run ended before 50 frames were delivered live: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	rd, err := datasets.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var frames, sent int
	for rd.Next() {
		rec := rd.Record()
		switch rec.Kind {
		case datasets.KindFrame:
			frames++
		case datasets.KindSent:
			sent++
			if bytes.Equal(bytes.TrimSpace(rec.Payload), []byte(polymarket.PingText)) {
				t.Fatalf("sent a heartbeat: %q", rec.Payload)
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if frames < 50 || sent == 0 {
		t.Fatalf("%d frames recorded, %d frames sent", frames, sent)
	}
}
