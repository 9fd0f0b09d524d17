package hyperliquid

// The trading API as the venue serves it (tradeapi.TradingAPI), over a
// simulated exchange: POST /info (l2Book, allMids, meta, metaAndAssetCtxs,
// openOrders, frontendOpenOrders, orderStatus, userFills,
// clearinghouseState), POST /exchange (order, cancel, cancelByCloid,
// modify, batchModify, updateLeverage), and on the WebSocket the post
// method and the userFills, orderUpdates and userEvents subscriptions.
// Shapes and texts: the exchange and info endpoint docs
// (hyperliquid.gitbook.io, "Exchange endpoint", "Info endpoint",
// "Subscriptions", "Post requests") and the TypeScript SDK's schemas.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue/internal/ethsig"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// TradingAPI implements tradeapi.TradingServer.
func (driver) TradingAPI() tradeapi.TradingAPI { return tradingAPI{} }

type tradingAPI struct{}

// maxBody bounds a request body (the venue's own limit is of this order).
const maxBody = 1 << 20

// maxBatch bounds the orders or cancels of one action.
const maxBatch = 1000

func (tradingAPI) Handler(ex tradeapi.Exchange, opt tradeapi.TradingOptions) http.Handler {
	t := &trader{ex: ex, opt: opt, nonces: map[string]*nonceSet{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/info", t.serveInfo)
	mux.HandleFunc("/exchange", t.serveExchange)
	return mux
}

func (tradingAPI) NewSession(ex tradeapi.Exchange, opt tradeapi.TradingOptions, push func([]byte)) tradeapi.TradingSession {
	return &tradeSession{t: &trader{ex: ex, opt: opt, nonces: map[string]*nonceSet{}}, push: push, subs: map[string]func(){}}
}

// trader answers requests from an Exchange.
type trader struct {
	ex  tradeapi.Exchange
	opt tradeapi.TradingOptions

	mu     sync.Mutex
	nonces map[string]*nonceSet
}

// nonceSet is the venue's rule: a nonce is accepted once, and only if
// larger than the smallest of the 100 highest seen (docs "Nonces and API
// wallets").
type nonceSet struct{ seen []uint64 }

func (n *nonceSet) accept(v uint64) bool {
	if len(n.seen) == 100 {
		low := n.seen[0]
		for _, s := range n.seen {
			low = min(low, s)
		}
		if v <= low {
			return false
		}
	}
	for _, s := range n.seen {
		if s == v {
			return false
		}
	}
	if len(n.seen) == 100 {
		i := 0
		for j, s := range n.seen {
			if s < n.seen[i] {
				i = j
			}
		}
		n.seen[i] = v
	} else {
		n.seen = append(n.seen, v)
	}
	return true
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(b) > maxBody {
		http.Error(w, "Failed to deserialize the JSON body into the target type", http.StatusUnprocessableEntity)
		return nil, false
	}
	return b, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if raw, ok := v.(json.RawMessage); ok {
		w.Write(raw)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is a request the venue refuses with an HTTP status and text.
type apiError struct {
	status int
	text   string
}

func (e *apiError) Error() string { return e.text }

func deserializeError(body []byte) *apiError {
	return &apiError{http.StatusUnprocessableEntity, "Failed to deserialize the JSON body into the target type"}
}

func (t *trader) serveInfo(w http.ResponseWriter, r *http.Request) {
	serveJSON(w, r, func(body []byte) (any, error) { return t.info(body) })
}

func (t *trader) serveExchange(w http.ResponseWriter, r *http.Request) {
	serveJSON(w, r, func(body []byte) (any, error) { return t.exchange(r.Context(), body) })
}

// serveJSON answers a POST with f's value as JSON, or its apiError.
func serveJSON(w http.ResponseWriter, r *http.Request, f func(body []byte) (any, error)) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	v, err := f(body)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			http.Error(w, ae.text, ae.status)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// px formats a fixed-point price or size as the venue does: no trailing
// zeros, but at least one decimal ("106230.0", "0.00123").
func px(v int64) string {
	s := book.FormatDecimal(abs(v), Scale.PriceDecimals)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		if strings.HasSuffix(s, ".") {
			s += "0"
		}
	} else {
		s += ".0"
	}
	if v < 0 {
		s = "-" + s
	}
	return s
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// money formats money (10 decimals) as the venue's USD strings.
func money(v int64) string {
	neg := v < 0
	s := book.FormatDecimal(abs(v), 10)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "" {
		s = "0"
	}
	if strings.Contains(s, ".") == false {
		s += ".0"
	}
	if neg && s != "0.0" {
		s = "-" + s
	}
	return s
}

// universe returns the perpetuals' coins in asset-index order: the latest
// recorded meta body, else the instruments seen.
func (t *trader) universe() (coins []string, meta json.RawMessage, szDec map[string]int, maxLev map[string]int) {
	rec := t.ex.Recorded()
	szDec, maxLev = map[string]int{}, map[string]int{}
	for i := len(rec) - 1; i >= 0; i-- {
		var m struct {
			Universe []struct {
				Name        string `json:"name"`
				SzDecimals  int    `json:"szDecimals"`
				MaxLeverage int    `json:"maxLeverage"`
			} `json:"universe"`
			Tokens json.RawMessage `json:"tokens"`
		}
		if json.Unmarshal(rec[i], &m) != nil || len(m.Universe) == 0 || m.Tokens != nil {
			continue
		}
		for _, u := range m.Universe {
			coins = append(coins, u.Name)
			szDec[u.Name], maxLev[u.Name] = u.SzDecimals, u.MaxLeverage
		}
		return coins, rec[i], szDec, maxLev
	}
	type uni struct {
		Name        string `json:"name"`
		SzDecimals  int    `json:"szDecimals"`
		MaxLeverage int    `json:"maxLeverage"`
	}
	var us []uni
	for _, in := range t.ex.Instruments() {
		sd := max(in.SzDecimals, 0)
		coins = append(coins, in.ID)
		szDec[in.ID], maxLev[in.ID] = sd, 20
		us = append(us, uni{in.ID, sd, 20})
	}
	meta, _ = json.Marshal(map[string]any{"universe": us, "marginTables": []any{}})
	return coins, meta, szDec, maxLev
}

func (t *trader) coinOf(asset int) (string, bool) {
	coins, _, _, _ := t.universe()
	if asset < 0 || asset >= len(coins) {
		return "", false
	}
	return coins[asset], true
}

func (t *trader) assetOf(coin string) int {
	coins, _, _, _ := t.universe()
	for i, c := range coins {
		if c == coin {
			return i
		}
	}
	return -1
}

// account resolves the account a user address names.
func (t *trader) account(user string) (tradeapi.Account, bool) {
	if t.opt.AnySignature {
		return t.ex.Account(t.defaultAccount())
	}
	return t.ex.Lookup(strings.ToLower(user))
}

func (t *trader) defaultAccount() string {
	if t.opt.DefaultAccount != "" {
		return strings.ToLower(t.opt.DefaultAccount)
	}
	return "0x0000000000000000000000000000000000000000"
}

type infoReq struct {
	Type  string          `json:"type"`
	User  string          `json:"user"`
	Coin  string          `json:"coin"`
	Oid   json.RawMessage `json:"oid"`
	Dex   string          `json:"dex"`
	Extra json.RawMessage `json:"-"`
}

// info answers one info request.
func (t *trader) info(body []byte) (any, error) {
	var req infoReq
	if err := json.Unmarshal(body, &req); err != nil || req.Type == "" {
		return nil, deserializeError(body)
	}
	switch req.Type {
	case "meta":
		_, meta, _, _ := t.universe()
		return meta, nil
	case "metaAndAssetCtxs":
		coins, meta, _, _ := t.universe()
		mids := t.mids()
		ctxs := make([]map[string]any, len(coins))
		for i, c := range coins {
			m, ok := mids[c]
			var mid any
			mark := "0.0"
			if ok {
				mid, mark = m, m
			}
			ctxs[i] = map[string]any{"funding": "0.0", "openInterest": "0.0", "prevDayPx": mark, "dayNtlVlm": "0.0",
				"premium": "0.0", "oraclePx": mark, "markPx": mark, "midPx": mid, "impactPxs": nil, "dayBaseVlm": "0.0"}
		}
		return []any{meta, ctxs}, nil
	case "allMids":
		return t.mids(), nil
	case "l2Book":
		bids, asks, exNs, ok := t.ex.Book(req.Coin, 20, nil, nil)
		if !ok {
			return json.RawMessage("null"), nil
		}
		return map[string]any{"coin": req.Coin, "time": exNs / 1e6, "levels": [2][]map[string]any{levelsJSON(bids), levelsJSON(asks)}}, nil
	case "openOrders", "frontendOpenOrders":
		a, ok := t.account(req.User)
		out := []map[string]any{}
		if !ok {
			return out, nil
		}
		for _, o := range a.Orders(nil, true) {
			out = append(out, t.orderJSON(o, req.Type == "frontendOpenOrders"))
		}
		return out, nil
	case "orderStatus":
		a, ok := t.account(req.User)
		if !ok {
			return map[string]any{"status": "unknownOid"}, nil
		}
		o, found := t.findOrder(a, req.Oid)
		if !found {
			return map[string]any{"status": "unknownOid"}, nil
		}
		return map[string]any{"status": "order", "order": map[string]any{"order": t.orderJSON(o, true),
			"status": orderStatus(o), "statusTimestamp": statusMs(o)}}, nil
	case "userFills", "userFillsByTime":
		a, ok := t.account(req.User)
		out := []map[string]any{}
		if !ok {
			return out, nil
		}
		fills := a.Fills(nil)
		for i := len(fills) - 1; i >= 0 && len(out) < 2000; i-- { // newest first, as the venue
			out = append(out, t.fillJSON(fills[i]))
		}
		return out, nil
	case "clearinghouseState":
		a, ok := t.account(req.User)
		if !ok {
			var err error
			if a, ok = t.ex.Account(strings.ToLower(req.User)); !ok {
				return nil, err
			}
		}
		return t.clearinghouse(a), nil
	}
	return nil, deserializeError(body)
}

func levelsJSON(ls []book.Level) []map[string]any {
	out := make([]map[string]any, len(ls))
	for i, l := range ls {
		out[i] = map[string]any{"px": px(l.Price), "sz": px(l.Size), "n": l.Count}
	}
	return out
}

func (t *trader) mids() map[string]string {
	out := map[string]string{}
	for _, in := range t.ex.Instruments() {
		if in.Mid > 0 {
			out[in.ID] = px(in.Mid)
		}
	}
	return out
}

func (t *trader) findOrder(a tradeapi.Account, oid json.RawMessage) (tradeapi.SimOrder, bool) {
	var s string
	if json.Unmarshal(oid, &s) == nil && strings.HasPrefix(s, "0x") {
		return a.Order(0, s)
	}
	var n uint64
	if json.Unmarshal(oid, &n) != nil {
		return tradeapi.SimOrder{}, false
	}
	return a.Order(n, "")
}

func side(buy bool) string {
	if buy {
		return "B"
	}
	return "A"
}

func tifName(tif string) string {
	switch tif {
	case "IOC":
		return "Ioc"
	case "ALO":
		return "Alo"
	}
	return "Gtc"
}

func (t *trader) orderJSON(o tradeapi.SimOrder, frontend bool) map[string]any {
	m := map[string]any{"coin": o.Instrument, "side": side(o.Buy), "limitPx": px(o.Price), "sz": px(o.Size - o.Filled),
		"oid": o.ID, "timestamp": o.SubmitNs / 1e6, "origSz": px(o.Size)}
	if o.ClientID != "" {
		m["cloid"] = o.ClientID
	}
	if frontend {
		m["triggerCondition"], m["isTrigger"], m["triggerPx"], m["children"] = "N/A", false, "0.0", []any{}
		m["isPositionTpsl"], m["reduceOnly"], m["orderType"], m["tif"] = false, o.ReduceOnly, "Limit", tifName(o.TIF)
		if o.ClientID == "" {
			m["cloid"] = nil
		}
	}
	return m
}

// orderStatus is the venue's status word of an order.
func orderStatus(o tradeapi.SimOrder) string {
	switch o.Status {
	case "open", "pending":
		return "open"
	case "filled":
		return "filled"
	case "rejected":
		return "rejected"
	case "expired":
		return "canceled"
	}
	if o.TIF == "IOC" {
		if o.Filled > 0 {
			return "filled"
		}
		return "iocCancelRejected"
	}
	return "canceled"
}

func statusMs(o tradeapi.SimOrder) int64 {
	if o.DoneNs != 0 {
		return o.DoneNs / 1e6
	}
	return o.SubmitNs / 1e6
}

func (t *trader) fillJSON(f tradeapi.SimFill) map[string]any {
	ms := f.ExchangeNs / 1e6
	if ms == 0 {
		ms = f.RecvNs / 1e6
	}
	q := f.Size
	if !f.Buy {
		q = -q
	}
	dir := "Open Long"
	switch {
	case f.Buy && f.Position < 0:
		dir = "Close Short"
	case !f.Buy && f.Position > 0:
		dir = "Close Long"
	case !f.Buy:
		dir = "Open Short"
	}
	hash := fmt.Sprintf("0x%064x", f.Seq)
	return map[string]any{"coin": f.Instrument, "px": px(f.Price), "sz": px(f.Size), "side": side(f.Buy), "time": ms,
		"startPosition": px(f.Position), "dir": dir, "closedPnl": money(f.ClosedPnl), "hash": hash, "oid": f.OrderID,
		"crossed": !f.Maker, "fee": money(f.Fee), "tid": f.Seq, "feeToken": "USDC", "builderFee": nil}
}

func (t *trader) clearinghouse(a tradeapi.Account) map[string]any {
	st := a.State()
	_, _, _, maxLev := t.universe()
	var ntl, margin int64
	positions := []map[string]any{}
	for _, p := range st.Positions {
		lev, cross := a.Leverage(p.Instrument)
		lev = max(lev, 1)
		val := abs(p.Value)
		used := val / int64(lev)
		ntl += val
		margin += used
		typ := "isolated"
		if cross {
			typ = "cross"
		}
		roe := "0.0"
		if used != 0 {
			roe = strconv.FormatFloat(float64(p.Upnl)/float64(used), 'f', -1, 64)
		}
		var liq any
		if p.LiqPx > 0 {
			liq = px(p.LiqPx)
		}
		positions = append(positions, map[string]any{"type": "oneWay", "position": map[string]any{
			"coin": p.Instrument, "szi": px(p.Size), "entryPx": px(p.EntryPx), "positionValue": money(val),
			"unrealizedPnl": money(p.Upnl), "returnOnEquity": roe, "liquidationPx": liq, "marginUsed": money(used),
			"maxLeverage": maxLev[p.Instrument], "leverage": map[string]any{"type": typ, "value": lev},
			"cumFunding": map[string]any{"allTime": "0.0", "sinceOpen": "0.0", "sinceChange": "0.0"}}})
	}
	summary := map[string]any{"accountValue": money(st.Equity), "totalNtlPos": money(ntl), "totalRawUsd": money(st.Cash),
		"totalMarginUsed": money(margin)}
	return map[string]any{"marginSummary": summary, "crossMarginSummary": summary, "crossMaintenanceMarginUsed": money(margin / 2),
		"withdrawable": money(max(st.Equity-margin, 0)), "assetPositions": positions, "time": t.ex.NowNs() / 1e6}
}

// exchangeReq is a signed action.
type exchangeReq struct {
	Action    json.RawMessage `json:"action"`
	Nonce     uint64          `json:"nonce"`
	Signature struct {
		R string          `json:"r"`
		S string          `json:"s"`
		V json.RawMessage `json:"v"`
	} `json:"signature"`
	VaultAddress *string `json:"vaultAddress"`
	ExpiresAfter *uint64 `json:"expiresAfter"`
}

// errResp is the venue's whole-action refusal.
func errResp(text string) map[string]any { return map[string]any{"status": "err", "response": text} }

func okResp(typ string, data any) map[string]any {
	r := map[string]any{"type": typ}
	if data != nil {
		r["data"] = data
	}
	return map[string]any{"status": "ok", "response": r}
}

// signer recovers the account of a signed action.
func (t *trader) signer(req *exchangeReq) (string, error) {
	if t.opt.AnySignature {
		return t.defaultAccount(), nil
	}
	vault := ""
	if req.VaultAddress != nil {
		vault = *req.VaultAddress
	}
	h, err := actionHash(req.Action, req.Nonce, vault, req.ExpiresAfter)
	if err != nil {
		return "", err
	}
	r, okR := new(big.Int).SetString(strings.TrimPrefix(req.Signature.R, "0x"), 16)
	s, okS := new(big.Int).SetString(strings.TrimPrefix(req.Signature.S, "0x"), 16)
	v, errV := strconv.Atoi(string(req.Signature.V))
	if !okR || !okS || errV != nil || r.BitLen() > 256 || s.BitLen() > 256 {
		return "", ethsig.ErrSignature
	}
	return ethsig.Recover(agentDigest(h, t.opt.Testnet), ethsig.Uint(r), ethsig.Uint(s), v)
}

// exchange answers one signed action.
func (t *trader) exchange(ctx context.Context, body []byte) (any, error) {
	var req exchangeReq
	if err := json.Unmarshal(body, &req); err != nil || len(req.Action) == 0 {
		return nil, deserializeError(body)
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(req.Action, &head) != nil || head.Type == "" {
		return nil, deserializeError(body)
	}
	user, err := t.signer(&req)
	if err != nil {
		return errResp("User or API Wallet does not exist."), nil
	}
	t.mu.Lock()
	ns := t.nonces[user]
	if ns == nil {
		if len(t.nonces) >= 4096 {
			t.mu.Unlock()
			return errResp("too many users"), nil
		}
		ns = &nonceSet{}
		t.nonces[user] = ns
	}
	fresh := ns.accept(req.Nonce)
	t.mu.Unlock()
	if !fresh {
		return errResp(fmt.Sprintf("Invalid nonce: duplicate nonce %d", req.Nonce)), nil
	}
	a, ok := t.ex.Account(user)
	if !ok {
		return errResp("too many accounts on this simulated exchange"), nil
	}
	switch head.Type {
	case "order":
		return t.order(ctx, a, req.Action, body)
	case "cancel", "cancelByCloid":
		return t.cancel(ctx, a, head.Type, req.Action, body)
	case "modify":
		return t.modify(ctx, a, req.Action, body)
	case "batchModify":
		return t.batchModify(ctx, a, req.Action, body)
	case "updateLeverage":
		var u struct {
			Asset    int  `json:"asset"`
			IsCross  bool `json:"isCross"`
			Leverage int  `json:"leverage"`
		}
		if json.Unmarshal(req.Action, &u) != nil {
			return nil, deserializeError(body)
		}
		coin, ok := t.coinOf(u.Asset)
		if !ok {
			return errResp(fmt.Sprintf("Unknown asset %d", u.Asset)), nil
		}
		_, _, _, maxLev := t.universe()
		if u.Leverage < 1 || (maxLev[coin] > 0 && u.Leverage > maxLev[coin]) {
			return errResp("Invalid leverage value"), nil
		}
		a.SetLeverage(coin, u.Leverage, u.IsCross)
		return okResp("default", nil), nil
	case "scheduleCancel", "noop":
		return okResp("default", nil), nil
	}
	return errResp("tapedeck: action " + strconv.Quote(head.Type) + " is not simulated"), nil
}

// wireOrder is an order as the exchange endpoint takes it.
type wireOrder struct {
	A int    `json:"a"`
	B bool   `json:"b"`
	P string `json:"p"`
	S string `json:"s"`
	R bool   `json:"r"`
	T struct {
		Limit *struct {
			Tif string `json:"tif"`
		} `json:"limit"`
		Trigger json.RawMessage `json:"trigger"`
	} `json:"t"`
	C string `json:"c"`
}

// request converts a wire order, or returns the venue's error text.
func (t *trader) request(w wireOrder) (tradeapi.SimOrderRequest, string) {
	coin, ok := t.coinOf(w.A)
	if !ok {
		return tradeapi.SimOrderRequest{}, fmt.Sprintf("Unknown asset %d", w.A)
	}
	suffix := fmt.Sprintf(" asset=%d", w.A)
	if w.T.Trigger != nil {
		return tradeapi.SimOrderRequest{}, "tapedeck: trigger orders are not simulated" + suffix
	}
	tif := "GTC"
	if w.T.Limit != nil {
		switch w.T.Limit.Tif {
		case "Gtc":
		case "Ioc", "FrontendMarket":
			tif = "IOC"
		case "Alo":
			tif = "ALO"
		default:
			return tradeapi.SimOrderRequest{}, "Invalid TIF" + suffix
		}
	}
	p, err := book.ParseDecimal([]byte(w.P), Scale.PriceDecimals)
	if err != nil || p <= 0 {
		return tradeapi.SimOrderRequest{}, "Order has invalid price." + suffix
	}
	s, err := book.ParseDecimal([]byte(w.S), Scale.SizeDecimals)
	if err != nil || s <= 0 {
		return tradeapi.SimOrderRequest{}, "Order has invalid size." + suffix
	}
	if w.C != "" {
		if _, err := ethsig.Bytes32(w.C + strings.Repeat("0", 32)); err != nil || len(w.C) != 34 {
			return tradeapi.SimOrderRequest{}, "Invalid cloid" + suffix
		}
	}
	return tradeapi.SimOrderRequest{Instrument: coin, Buy: w.B, Price: p, Size: s, TIF: tif, ReduceOnly: w.R,
		ClientID: strings.ToLower(w.C)}, ""
}

// status is an order's entry in statuses: resting, filled or error.
func (t *trader) status(o tradeapi.SimOrder) any {
	asset := t.assetOf(o.Instrument)
	switch {
	case o.Status == "open" || o.Status == "pending":
		r := map[string]any{"oid": o.ID}
		if o.ClientID != "" {
			r["cloid"] = o.ClientID
		}
		return map[string]any{"resting": r}
	case o.Filled > 0:
		f := map[string]any{"totalSz": px(o.Filled), "avgPx": px(o.AvgPrice), "oid": o.ID}
		if o.ClientID != "" {
			f["cloid"] = o.ClientID
		}
		return map[string]any{"filled": f}
	}
	reason := o.Reason
	if reason == "" {
		reason = "Order was canceled"
	}
	return map[string]any{"error": fmt.Sprintf("%s asset=%d", reason, asset)}
}

func (t *trader) order(ctx context.Context, a tradeapi.Account, action json.RawMessage, body []byte) (any, error) {
	var act struct {
		Orders   []wireOrder `json:"orders"`
		Grouping string      `json:"grouping"`
	}
	if json.Unmarshal(action, &act) != nil || len(act.Orders) > maxBatch {
		return nil, deserializeError(body)
	}
	statuses := make([]any, len(act.Orders))
	var reqs []tradeapi.SimOrderRequest
	var at []int
	for i, w := range act.Orders {
		r, bad := t.request(w)
		if bad == "" && r.ClientID != "" {
			if _, dup := a.Order(0, r.ClientID); dup {
				bad = fmt.Sprintf("Duplicate cloid asset=%d", w.A)
			}
		}
		if bad != "" {
			statuses[i] = map[string]any{"error": bad}
			continue
		}
		reqs = append(reqs, r)
		at = append(at, i)
	}
	for j, o := range a.Place(ctx, reqs) {
		statuses[at[j]] = t.status(o)
	}
	return okResp("order", map[string]any{"statuses": statuses}), nil
}

func (t *trader) cancel(ctx context.Context, a tradeapi.Account, typ string, action json.RawMessage, body []byte) (any, error) {
	var act struct {
		Cancels []struct {
			A     *int   `json:"a"`
			O     uint64 `json:"o"`
			Asset *int   `json:"asset"`
			Cloid string `json:"cloid"`
		} `json:"cancels"`
	}
	if json.Unmarshal(action, &act) != nil || len(act.Cancels) > maxBatch {
		return nil, deserializeError(body)
	}
	statuses := make([]any, len(act.Cancels))
	for i, c := range act.Cancels {
		asset := 0
		if c.A != nil {
			asset = *c.A
		} else if c.Asset != nil {
			asset = *c.Asset
		}
		id := c.O
		var o tradeapi.SimOrder
		var found bool
		if typ == "cancelByCloid" {
			o, found = a.Order(0, strings.ToLower(c.Cloid))
		} else {
			o, found = a.Order(id, "")
		}
		coin, _ := t.coinOf(asset)
		if !found || o.Instrument != coin || a.Cancel(ctx, []uint64{o.ID})[0] != "" {
			statuses[i] = map[string]any{"error": fmt.Sprintf("Order was never placed, already canceled, or filled. asset=%d", asset)}
			continue
		}
		statuses[i] = "success"
	}
	return okResp("cancel", map[string]any{"statuses": statuses}), nil
}

type wireModify struct {
	Oid   json.RawMessage `json:"oid"`
	Order wireOrder       `json:"order"`
}

// modifyOne modifies one order: the same order id when only price or size
// change, as the venue keeps it; a new order otherwise is not offered.
func (t *trader) modifyOne(ctx context.Context, a tradeapi.Account, m wireModify) any {
	o, found := t.findOrder(a, m.Oid)
	r, bad := t.request(m.Order)
	switch {
	case bad != "":
		return map[string]any{"error": bad}
	case !found || o.Status != "open":
		return map[string]any{"error": fmt.Sprintf("Cannot modify canceled or filled order asset=%d", m.Order.A)}
	case r.Instrument != o.Instrument || r.Buy != o.Buy:
		return map[string]any{"error": fmt.Sprintf("Cannot modify order to a different asset or side asset=%d", m.Order.A)}
	}
	n, why := a.Modify(ctx, o.ID, r.Price, r.Size)
	if why != "" {
		return map[string]any{"error": fmt.Sprintf("Cannot modify canceled or filled order asset=%d", m.Order.A)}
	}
	return t.status(n)
}

func (t *trader) modify(ctx context.Context, a tradeapi.Account, action json.RawMessage, body []byte) (any, error) {
	var m wireModify
	if json.Unmarshal(action, &m) != nil {
		return nil, deserializeError(body)
	}
	st := t.modifyOne(ctx, a, m)
	if e, ok := st.(map[string]any); ok {
		if msg, ok := e["error"]; ok {
			return errResp(fmt.Sprint(msg)), nil
		}
	}
	return okResp("default", nil), nil
}

func (t *trader) batchModify(ctx context.Context, a tradeapi.Account, action json.RawMessage, body []byte) (any, error) {
	var act struct {
		Modifies []wireModify `json:"modifies"`
	}
	if json.Unmarshal(action, &act) != nil || len(act.Modifies) > maxBatch {
		return nil, deserializeError(body)
	}
	statuses := make([]any, len(act.Modifies))
	for i, m := range act.Modifies {
		statuses[i] = t.modifyOne(ctx, a, m)
	}
	return okResp("order", map[string]any{"statuses": statuses}), nil
}

// tradeSession is the trading side of one WebSocket connection.
type tradeSession struct {
	t    *trader
	push func([]byte)

	mu   sync.Mutex
	subs map[string]func() // canonical subscription → stop
}

// maxUserSubs bounds the user subscriptions of one connection.
const maxUserSubs = 64

func frame(channel string, data any) []byte {
	b, _ := json.Marshal(map[string]any{"channel": channel, "data": data})
	return b
}

func (s *tradeSession) Handle(msg []byte) ([][]byte, bool) {
	var req struct {
		Method       string          `json:"method"`
		ID           json.RawMessage `json:"id"`
		Request      json.RawMessage `json:"request"`
		Subscription json.RawMessage `json:"subscription"`
	}
	if json.Unmarshal(msg, &req) != nil {
		return nil, false
	}
	switch req.Method {
	case "post":
		return [][]byte{s.post(req.ID, req.Request)}, true
	case "subscribe", "unsubscribe":
	default:
		return nil, false
	}
	var sub struct {
		Type string `json:"type"`
		User string `json:"user"`
	}
	if json.Unmarshal(req.Subscription, &sub) != nil {
		return nil, false
	}
	switch sub.Type {
	case "userFills", "orderUpdates", "userEvents":
	default:
		return nil, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, req.Subscription) != nil {
		return nil, false
	}
	key := compact.String()
	ack := []byte(`{"channel":"subscriptionResponse","data":{"method":"` + req.Method + `","subscription":` + key + `}}`)
	s.mu.Lock()
	defer s.mu.Unlock()
	stop, have := s.subs[key]
	if req.Method == "unsubscribe" {
		if !have {
			return [][]byte{errorFrame("Already unsubscribed: ", compact.Bytes())}, true
		}
		stop()
		delete(s.subs, key)
		return [][]byte{ack}, true
	}
	if have {
		return [][]byte{errorFrame("Already subscribed: ", compact.Bytes())}, true
	}
	if len(s.subs) >= maxUserSubs {
		return [][]byte{errorFrame("Too many subscriptions: ", compact.Bytes())}, true
	}
	user := strings.ToLower(sub.User)
	a, ok := s.t.ex.Account(user)
	if s.t.opt.AnySignature {
		a, ok = s.t.ex.Account(s.t.defaultAccount())
	}
	if !ok {
		return [][]byte{errorFrame("Invalid subscription ", compact.Bytes())}, true
	}
	answers := [][]byte{ack}
	switch sub.Type {
	case "userFills":
		fills := a.Fills(nil)
		out := make([]map[string]any, 0, len(fills))
		for _, f := range fills {
			out = append(out, s.t.fillJSON(f))
		}
		answers = append(answers, frame("userFills", map[string]any{"isSnapshot": true, "user": user, "fills": out}))
	}
	t := s.t
	typ := sub.Type
	push := s.push
	s.subs[key] = a.Watch(func(u tradeapi.SimUpdate) {
		switch {
		case typ == "userFills" && u.Fill != nil:
			push(frame("userFills", map[string]any{"user": user, "fills": []any{t.fillJSON(*u.Fill)}}))
		case typ == "userEvents" && u.Fill != nil:
			push(frame("user", map[string]any{"fills": []any{t.fillJSON(*u.Fill)}}))
		case typ == "orderUpdates" && u.Fill == nil:
			push(frame("orderUpdates", []any{map[string]any{"order": t.orderJSON(u.Order, false),
				"status": orderStatus(u.Order), "statusTimestamp": statusMs(u.Order)}}))
		}
	})
	return answers, true
}

// post answers a WebSocket post request: {"type":"info"|"action","payload":…}.
func (s *tradeSession) post(id json.RawMessage, request json.RawMessage) []byte {
	var r struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	reply := func(resp any) []byte { return frame("post", map[string]any{"id": id, "response": resp}) }
	if json.Unmarshal(request, &r) != nil {
		return reply(map[string]any{"type": "error", "payload": "Error parsing JSON into valid websocket request"})
	}
	var v any
	var err error
	switch r.Type {
	case "info":
		v, err = s.t.info(r.Payload)
		if err == nil {
			var typ struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(r.Payload, &typ)
			return reply(map[string]any{"type": "info", "payload": map[string]any{"type": typ.Type, "data": v}})
		}
	case "action":
		v, err = s.t.exchange(context.Background(), r.Payload)
		if err == nil {
			return reply(map[string]any{"type": "action", "payload": v})
		}
	default:
		err = errors.New("Error parsing JSON into valid websocket request")
	}
	return reply(map[string]any{"type": "error", "payload": err.Error()})
}

func (s *tradeSession) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, stop := range s.subs {
		stop()
		delete(s.subs, k)
	}
}
