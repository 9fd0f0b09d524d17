package backtest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/replayer"
)

const (
	pmSample = "../datasets/samples/polymarket"
	hlSample = "../datasets/samples/hyperliquid"
)

func runBuiltin(t *testing.T, path, name string, params Params, cfg Config) *Result {
	t.Helper()
	s, ps, err := NewBuiltin(name, params)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := Run(context.Background(), []string{path}, s, cfg, RunOptions{Name: name, Params: ps,
		Replay: []replayer.Option{replayer.WithHashCheck(true)}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkBooks re-derives cash and positions from the fills: the books the
// engine keeps must be the sum of its executions (and settlements).
func checkBooks(t *testing.T, res *Result, start int64) {
	t.Helper()
	c := start
	pos := map[string]int64{}
	for i, f := range res.Fills {
		sc := res.Scales[f.Instrument]
		n := Notional(f.Price, f.Size, sc.PriceDecimals, sc.SizeDecimals)
		if f.Side == Buy {
			c -= n
			pos[f.Instrument] += f.Size
		} else {
			c += n
			pos[f.Instrument] -= f.Size
		}
		c -= f.Fee
		if f.Size <= 0 || f.Seq != uint64(i+1) {
			t.Fatalf("fill %+v", f)
		}
		o := res.Orders[f.OrderID-1]
		if o.Instrument != f.Instrument || o.Side != f.Side || !better(oppositeOf(o.Side), o.Price, f.Price) && o.Amount == 0 {
			t.Fatalf("fill %+v outside its order %+v", f, *o)
		}
	}
	if got := int64(res.Summary.EndCash*1e10 + 0.5); abs64(got-c) > 1e4 {
		t.Fatalf("end cash %v, fills say %d", res.Summary.EndCash, c)
	}
	for id, p := range pos {
		sc := res.Scales[id]
		if got := res.Summary.Positions[id]; p != 0 && got != float64(p)/float64(pow10(sc.SizeDecimals)) {
			t.Fatalf("position %s = %v, fills say %d", id, got, p)
		}
	}
}

// oppositeOf flips a side: a fill of a buy is at or below its limit, which
// is better(Sell, limit, price).
func oppositeOf(s Side) Side {
	if s == Buy {
		return Sell
	}
	return Buy
}

func TestMarketMakerOnPolymarketSample(t *testing.T) {
	cfg := Config{Cash: 1000e10}
	res := runBuiltin(t, pmSample, "mm", Params{"spread": "0.02"}, cfg)
	s := res.Summary
	if s.Events == 0 || s.Fills == 0 || s.MakerFills != s.Fills || s.Orders == 0 {
		t.Fatalf("summary %+v: the passive maker should make maker fills only", s)
	}
	if s.StrategyError != "" || len(res.Errors) != 0 {
		t.Fatalf("errors %v", res.Errors)
	}
	for _, o := range res.Orders {
		if o.Status == StatusRejected && o.Reason == "" {
			t.Fatalf("order %d rejected without a reason", o.ID)
		}
		if o.Status == StatusFilled && o.Filled != o.Size {
			t.Fatalf("order %d filled %d of %d", o.ID, o.Filled, o.Size)
		}
	}
	checkBooks(t, res, cfg.Cash)
	// Markouts: one per fill and horizon that the data reached.
	if len(res.Markouts) == 0 || s.Markouts["1s"] == 0 && s.Markouts["10s"] == 0 {
		t.Fatalf("markouts %v", s.Markouts)
	}
}

// On the sample, every apparent complement edge (two asks summing below 1)
// is a book crossed inside one of the venue's same-time batches: the
// strategy sees none on settled books, so it sends nothing. With an edge
// of −0.02 it trades, and every FOK fills whole or leaves no trace.
func TestComplementOnPolymarketSample(t *testing.T) {
	cfg := Config{Cash: 10000e10}
	res := runBuiltin(t, pmSample, "complement", nil, cfg)
	checkBooks(t, res, cfg.Cash)
	if len(res.Orders) != 0 {
		t.Fatalf("%d orders on a sample without a settled edge", len(res.Orders))
	}
	res = runBuiltin(t, pmSample, "complement", Params{"edge": "-0.02"}, cfg)
	checkBooks(t, res, cfg.Cash)
	for _, o := range res.Orders {
		if o.TIF != FOK {
			t.Fatalf("order %+v is not a FOK", *o)
		}
		// A FOK fills all of its money's worth or leaves no trace.
		if o.Status == StatusRejected && o.Filled != 0 {
			t.Fatalf("rejected FOK %d filled %d", o.ID, o.Filled)
		}
	}
	if res.Summary.TakerFills == 0 || res.Summary.MakerFills != 0 {
		t.Fatalf("summary %+v", res.Summary)
	}
}

func TestMarketMakerOnHyperliquidSample(t *testing.T) {
	cfg := Config{Cash: 1e6 * 1e10}
	res := runBuiltin(t, hlSample, "mm", Params{"spread": "0.001", "size": "0.01", "instrument": "BTC"}, cfg)
	if res.Summary.Fills == 0 || res.Summary.Fees <= 0 {
		t.Fatalf("summary %+v", res.Summary)
	}
	for _, o := range res.Orders {
		if o.TIF != ALO || o.Instrument != "BTC" {
			t.Fatalf("order %+v", *o)
		}
	}
	checkBooks(t, res, cfg.Cash)
}

// Determinism: the same data, strategy and parameters give the same digest
// and byte-identical outputs.
func TestDeterminism(t *testing.T) {
	for _, c := range []struct {
		path string
		p    Params
	}{{pmSample, Params{"spread": "0.02"}}, {hlSample, Params{"size": "0.01", "instrument": "BTC"}}} {
		determinism(t, c.path, c.p)
	}
}

// determinism runs mm twice on a sample, margin, latency and queue model
// on: the same summary and byte-identical tables.
func determinism(t *testing.T, path string, p Params) {
	out := func() ([]byte, map[string][]byte) {
		cfg := Config{Cash: 1000e10, Latency: ConstantLatency{EntryNs: 2e6, AckNs: 1e6, CancelNs: 2e6}, FeeRate: 0.02}
		q, _ := ParseQueueModel("power:2")
		cfg.Queue = q
		res := runBuiltin(t, path, "mm", p, cfg)
		files := writeAll(t, res, t.TempDir(), columnar.Options{})
		j, err := json.Marshal(res.Summary)
		if err != nil {
			t.Fatal(err)
		}
		return j, files
	}
	j1, f1 := out()
	j2, f2 := out()
	if !bytes.Equal(j1, j2) {
		t.Fatalf("summaries differ:\n%s\n%s", j1, j2)
	}
	if len(f1) != 3*len(Tables) {
		t.Fatalf("outputs %v", len(f1))
	}
	for name, b := range f1 {
		if !bytes.Equal(b, f2[name]) {
			t.Fatalf("%s differs between two runs", name)
		}
		if strings.HasSuffix(name, ".csv") && bytes.Count(b, []byte("\n")) < 2 {
			t.Fatalf("%s is empty", name)
		}
	}
}

func TestBadParameters(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"nope", nil},
		{"mm", Params{"sprad": "0.02"}},
		{"mm", Params{"spread": "x"}},
		{"mm", Params{"spread": "-1"}},
		{"mm", Params{"spread": "NaN"}},
		{"complement", Params{"fee_rate": "2"}},
	} {
		if _, _, err := NewBuiltin(c.name, c.p); err == nil {
			t.Errorf("%s %v accepted", c.name, c.p)
		}
	}
	if _, _, err := Run(context.Background(), []string{pmSample}, Noop{}, Config{MakerRebateShare: 2}, RunOptions{}); err == nil {
		t.Error("a rebate share of 2 ran")
	}
}
