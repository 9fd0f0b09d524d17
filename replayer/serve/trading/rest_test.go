package trading_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// getJSON GETs url and decodes the body into v, returning the status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
	return resp.StatusCode
}

// TestPolymarketFeeRateAndNegRiskFromData checks GET /fee-rate and
// /neg-risk answer what the simulator and the recording say: the base fee
// is the taker rate the simulator charges the token's fills (here the
// configured 2%: 200 bps), another token's the rate its recording states
// (none: 0), and neg-risk what the recorded book summaries say of the
// market; an unknown token gets the venue's 404.
func TestPolymarketFeeRateAndNegRiskFromData(t *testing.T) {
	const token = "3329029450753225654467003002742946394863848082479209219558348197750220015613"
	const other = "48331043336612883890938759509493159234755048973500640148014422747788308965732"
	r := startTrading(t, []string{sample(t, "polymarket")},
		trading.Options{Speed: 1, Backtest: backtest.Config{Cash: 1000e10, FeeRates: map[string]float64{token: 0.02}}},
		tradeapi.TradingOptions{})
	// The replay starts with the first subscription; the instrument is
	// known once its first frame has come.
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+r.addr+"/ws/market", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"assets_ids":["`+token+`","`+other+`"],"type":"market"}`)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for !seen[token] || !seen[other] {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var evs []struct {
			AssetID string `json:"asset_id"`
		}
		if json.Unmarshal(msg, &evs) != nil {
			var one struct {
				AssetID string `json:"asset_id"`
			}
			_ = json.Unmarshal(msg, &one)
			evs = append(evs, one)
		}
		for _, e := range evs {
			seen[e.AssetID] = true
		}
	}
	base := "http://" + r.addr
	var fee struct {
		BaseFee *int64 `json:"base_fee"`
	}
	if st := getJSON(t, base+"/fee-rate?token_id="+token, &fee); st != 200 || fee.BaseFee == nil || *fee.BaseFee != 200 {
		t.Errorf("/fee-rate: %d %v, want 200 bps", st, fee.BaseFee)
	}
	fee.BaseFee = nil
	if st := getJSON(t, base+"/fee-rate/"+token, &fee); st != 200 || fee.BaseFee == nil || *fee.BaseFee != 200 {
		t.Errorf("/fee-rate/{token}: %d %v, want 200 bps", st, fee.BaseFee)
	}
	fee.BaseFee = nil
	if st := getJSON(t, base+"/fee-rate?token_id="+other, &fee); st != 200 || fee.BaseFee == nil || *fee.BaseFee != 0 {
		t.Errorf("/fee-rate of a fee-free token: %d %v", st, fee.BaseFee)
	}
	var neg struct {
		NegRisk *bool `json:"neg_risk"`
	}
	if st := getJSON(t, base+"/neg-risk?token_id="+token, &neg); st != 200 || neg.NegRisk == nil || *neg.NegRisk {
		t.Errorf("/neg-risk: %d %v, want false as recorded", st, neg.NegRisk)
	}
	var bad struct{ Error string }
	if st := getJSON(t, base+"/fee-rate?token_id=123", &bad); st != 404 || bad.Error == "" {
		t.Errorf("/fee-rate of an unknown token: %d %q", st, bad.Error)
	}
}
