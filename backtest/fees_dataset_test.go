package backtest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/venue"
)

// buyOnce buys $4.20 of YES (10 shares) with a FOK at 0.42 on each of the
// first n valid YES books it sees.
type buyOnce struct{ n int }

func (b *buyOnce) OnEvent(ctx *Context, e *feed.Event) {
	if b.n == 0 || e.Instrument != pmYes || e.Channel != feed.ChannelBook || e.Book == nil || !e.Book.Valid() {
		return
	}
	b.n--
	_, _ = ctx.Submit(OrderRequest{Instrument: pmYes, Side: Buy, Price: 4200, Amount: 42000, TIF: FOK})
}

// writePM writes a Polymarket dataset with the datasets writer, as the
// recorder lays one out: discovery's Gamma body on conn 0 (a note naming
// the request, then the body), then conn 1's connect and frames, 100 ms
// apart from t0.
func writePM(t *testing.T, gamma string, frames ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pm")
	w, err := datasets.Create(dir, datasets.Manifest{Venue: venue.Polymarket, Endpoint: "wss://ws-subscriptions-clob.polymarket.com/ws/market", StartNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	ns := t0
	add := func(k datasets.Kind, conn uint32, payload []byte) {
		ns += 100e6
		if _, err := w.Append(&datasets.Record{Kind: k, Conn: conn, WallNs: ns, MonoNs: ns - t0, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if gamma != "" {
		add(datasets.KindNote, 0, datasets.EncodeControl(datasets.Control{URL: "https://gamma-api.polymarket.com/markets?condition_ids=" + pmMarket,
			Code: 200, Text: "rest_response follows: GET https://gamma-api.polymarket.com/markets?condition_ids=" + pmMarket}))
		add(datasets.KindRESTResponse, 0, []byte(gamma))
	}
	add(datasets.KindConnect, 1, datasets.EncodeControl(datasets.Control{URL: "wss://ws-subscriptions-clob.polymarket.com/ws/market"}))
	for _, f := range frames {
		add(datasets.KindFrame, 1, []byte(strings.ReplaceAll(f, "TS", strconv.FormatInt((ns+100e6)/1e6, 10))))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	pmBookYes = `{"event_type":"book","asset_id":"` + pmYes + `","market":"` + pmMarket + `","timestamp":"TS","hash":"",` +
		`"bids":[{"price":"0.39","size":"50"},{"price":"0.40","size":"100"}],"asks":[{"price":"0.43","size":"200"},{"price":"0.42","size":"80"}],"tick_size":"0.01"}`
	pmTradeYes = `{"event_type":"last_trade_price","asset_id":"` + pmYes + `","market":"` + pmMarket +
		`","price":"0.42","size":"1","side":"BUY","fee_rate_bps":"300","timestamp":"TS"}`
)

// A recorded dataset's Gamma listing sets the market's rate; replayed
// end to end (backtest.Run), the fee is the formula's to the last decimal
// and the JSON summary says which rate and where from.
func TestFeeRateFromDataset(t *testing.T) {
	gamma := pmGamma(`"feesEnabled":true,"feeType":"sports_fees","feeSchedule":{"exponent":1,"rate":0.03,"takerOnly":true,"rebateRate":0.25}`)
	dir := writePM(t, gamma, pmBookYes, pmBookYes)
	res, _, err := Run(context.Background(), []string{dir}, &buyOnce{n: 1}, Config{Cash: cash(t, "100"), FeeRate: 0.5}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 10 × 0.03 × 0.42 × 0.58 = 0.07308.
	if len(res.Fills) != 1 || res.Fills[0].Fee != cash(t, "0.07308") {
		t.Fatalf("fills %+v, want one with fee 0.07308 (errors %v)", res.Fills, res.Errors)
	}
	b, err := json.Marshal(&res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		FeeRates []struct {
			Market, Source, Key string
			Rate                float64
			Fills               int
			SinceNs             int64 `json:"since_ns"`
		} `json:"fee_rates"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.FeeRates) != 1 || sum.FeeRates[0].Market != pmMarket || sum.FeeRates[0].Source != "recorded_listing" ||
		sum.FeeRates[0].Rate != 0.03 || sum.FeeRates[0].Key != "sports_fees" || sum.FeeRates[0].Fills != 1 ||
		sum.FeeRates[0].SinceNs != t0+200e6 {
		t.Fatalf("summary fee rates %s", b)
	}

	// A window that starts after the listing was recorded: its rate still
	// holds (the replay's warmup hands the body to the engine), since when
	// it was received.
	res, _, err = Run(context.Background(), []string{dir}, &buyOnce{n: 1}, Config{Cash: cash(t, "100"), FeeRate: 0.5},
		RunOptions{Replay: []replayer.Option{replayer.WithWindow(t0+350e6, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fills) != 1 || res.Fills[0].Fee != cash(t, "0.07308") || res.Fills[0].RecvNs < t0+350e6 ||
		len(res.Summary.FeeRates) != 1 || res.Summary.FeeRates[0].Source != "recorded_listing" || res.Summary.FeeRates[0].SinceNs != t0+200e6 {
		t.Fatalf("windowed: fills %+v, fee rates %+v", res.Fills, res.Summary.FeeRates)
	}

	// Without the listing: the first fill, before any trade, pays the
	// default; the trade's 300 bps apply to the second, after it.
	dir = writePM(t, "", pmBookYes, pmTradeYes, pmBookYes, pmBookYes) // the last brings the second order to the venue
	res, _, err = Run(context.Background(), []string{dir}, &buyOnce{n: 2}, Config{Cash: cash(t, "100"), FeeRate: 0.01}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fills) != 2 || res.Fills[0].Fee != cash(t, "0.02436") || res.Fills[1].Fee != cash(t, "0.07308") {
		t.Fatalf("fills %+v, want fees 0.02436 (default) then 0.07308 (300 bps)", res.Fills)
	}
	if u := res.Summary.FeeRates; len(u) != 2 || u[0].Source != "default" || u[1].Source != "recorded_trades" || u[1].Rate != 0.03 {
		t.Fatalf("fee rates %+v", u)
	}
}
