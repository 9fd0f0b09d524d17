package polymarket

// The CLOB API as the venue serves it (tradeapi.TradingAPI), over a simulated
// exchange: market data (GET /book, POST /books, /tick-size, /neg-risk,
// /fee-rate, /time, /midpoint), API keys (POST /auth/api-key, GET
// /auth/derive-api-key: L1 headers, an EIP-712 ClobAuth signature whose
// signer must be POLY_ADDRESS), and with L2 headers (POLY_API_KEY,
// POLY_PASSPHRASE, POLY_SIGNATURE: the URL-safe base64 HMAC-SHA256 of
// timestamp + method + path + body under the key's secret) orders (POST
// /order, /orders: the signed order as @polymarket/clob-client builds it,
// its EIP-712 signature checked, its hash the order id), cancels (DELETE
// /order, /orders, /cancel-all, /cancel-market-orders), GET /data/orders,
// /data/order/{id}, /data/trades and /balance-allowance; and the user
// WebSocket channel (order PLACEMENT/UPDATE/CANCELLATION, trade MATCHED).
// Shapes and texts: docs.polymarket.com (CLOB "Authentication", "Orders",
// "Trades", "User channel") and the client's sources.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/venue"
	"github.com/tapedeck/tapedeck/venue/internal/ethsig"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// TradingAPI implements tradeapi.TradingServer: each call is a new API, whose
// handler and sessions share their API keys and order ids, and nothing
// else does.
func (driver) TradingAPI() tradeapi.TradingAPI { return &tradingAPI{} }

// tradingAPI is one server's CLOB: its state lives as long as the server
// holds it.
type tradingAPI struct {
	mu sync.Mutex
	c  *clob
}

// clobOf returns the API's CLOB over ex, created on first use. An API
// serves one exchange: a call with another starts afresh (the old one's
// keys are not carried over).
func (t *tradingAPI) clobOf(ex tradeapi.Exchange, opt tradeapi.TradingOptions) *clob {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c == nil || t.c.ex != ex {
		t.c = newClob(ex, opt)
	}
	return t.c
}

const (
	maxBody       = 1 << 20
	maxBatch      = 15 // the venue's POST /orders limit
	maxKeys       = 4096
	authMessage   = "This message attests that I control the given wallet"
	usdcDecimals  = 6
	invalidL1     = "Invalid L1 Request headers"
	unauthorized  = "Unauthorized/Invalid api key"
	endCursor     = "LTE="
	sideBuyWire   = "BUY"
	sideSellWire  = "SELL"
	exchangeMatic = "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
	exchangeAmoy  = "0xdFE02Eb6733538f8Ea35D585af8DE5958AD99E40"
	exchangeNeg   = "0xC5d563A36AE78145C45a50134d48A1215220f80a"
)

// creds is one API key.
type creds struct {
	key, secret, passphrase, address string
}

// clob answers requests from an Exchange.
type clob struct {
	ex  tradeapi.Exchange
	opt tradeapi.TradingOptions

	mu     sync.Mutex
	keys   map[string]*creds            // by API key
	orders map[string]orderRef          // order hash → account and simulator id
	hashes map[string]map[uint64]string // account → simulator id → order hash
	neg    map[string]bool              // token → neg-risk, once the recording said
}

type orderRef struct {
	account string
	id      uint64
}

func newClob(ex tradeapi.Exchange, opt tradeapi.TradingOptions) *clob {
	return &clob{ex: ex, opt: opt, keys: map[string]*creds{}, orders: map[string]orderRef{}, hashes: map[string]map[uint64]string{}, neg: map[string]bool{}}
}

func (t *tradingAPI) Handler(ex tradeapi.Exchange, opt tradeapi.TradingOptions) http.Handler {
	c := t.clobOf(ex, opt)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /time", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.ex.NowNs()/1e9)
	})
	mux.HandleFunc("GET /book", c.getBook)
	mux.HandleFunc("POST /books", c.postBooks)
	mux.HandleFunc("GET /tick-size", c.tickSize)
	mux.HandleFunc("GET /neg-risk", func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("token_id")
		if _, ok := c.instrument(token); !ok {
			writeErr(w, http.StatusNotFound, "market not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"neg_risk": c.negRisk(token)})
	})
	feeRate := func(w http.ResponseWriter, token string) {
		in, ok := c.instrument(token)
		if !ok {
			writeErr(w, http.StatusNotFound, "market not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"base_fee": feeBps(in)})
	}
	mux.HandleFunc("GET /fee-rate", func(w http.ResponseWriter, r *http.Request) { feeRate(w, r.URL.Query().Get("token_id")) })
	mux.HandleFunc("GET /fee-rate/{token_id}", func(w http.ResponseWriter, r *http.Request) { feeRate(w, r.PathValue("token_id")) })
	mux.HandleFunc("GET /midpoint", func(w http.ResponseWriter, r *http.Request) {
		in, ok := c.instrument(r.URL.Query().Get("token_id"))
		if !ok || in.Mid == 0 {
			writeErr(w, http.StatusNotFound, "No orderbook exists for the requested token id")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"mid": dec(in.Mid, Scale.PriceDecimals)})
	})
	mux.HandleFunc("POST /auth/api-key", c.apiKey)
	mux.HandleFunc("GET /auth/derive-api-key", c.apiKey)
	mux.HandleFunc("POST /order", c.l2(c.postOrder))
	mux.HandleFunc("POST /orders", c.l2(c.postOrders))
	mux.HandleFunc("DELETE /order", c.l2(c.cancelOrder))
	mux.HandleFunc("DELETE /orders", c.l2(c.cancelOrders))
	mux.HandleFunc("DELETE /cancel-all", c.l2(c.cancelAll))
	mux.HandleFunc("DELETE /cancel-market-orders", c.l2(c.cancelMarket))
	mux.HandleFunc("GET /data/orders", c.l2(c.openOrders))
	mux.HandleFunc("GET /data/order/{id}", c.l2(c.getOrder))
	mux.HandleFunc("GET /data/trades", c.l2(c.trades))
	mux.HandleFunc("GET /balance-allowance", c.l2(c.balance))
	mux.HandleFunc("GET /balance-allowance/update", c.l2(c.balance))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, text string) {
	writeJSON(w, status, map[string]any{"error": text})
}

// dec formats a fixed-point value as the venue's plain decimal.
func dec(v int64, d uint8) string {
	s := book.FormatDecimal(v, d)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func (c *clob) instrument(token string) (tradeapi.SimInstrument, bool) {
	if token == "" {
		return tradeapi.SimInstrument{}, false
	}
	for _, in := range c.ex.Instruments() {
		if in.ID == token {
			return in, true
		}
	}
	return tradeapi.SimInstrument{}, false
}

// feeBps is a token's base fee as the venue states it (GET /fee-rate's
// base_fee, the feeRateBps a client signs into its orders): the taker rate
// the simulator charges its fills, from the recording (the market's listing,
// its trades' fee_rate_bps) or the user's --fee-rate, in basis points.
func feeBps(in tradeapi.SimInstrument) int64 {
	if !in.FeeKnown || in.TakerFeeRate <= 0 {
		return 0
	}
	return int64(math.Round(in.TakerFeeRate * 1e4))
}

// negRisk is what the recording says of a token's market being neg-risk
// (its listings and book summaries, latest last); false when it says
// nothing, as for most markets.
func (c *clob) negRisk(token string) bool {
	c.mu.Lock()
	neg, known := c.neg[token]
	c.mu.Unlock()
	if known {
		return neg
	}
	for _, body := range c.ex.Recorded() {
		if !bytes.Contains(body, []byte(token)) {
			continue
		}
		facts, _ := instrumentFacts(body)
		for i := range facts {
			if f := &facts[i]; f.Instrument == token && f.NegRisk != venue.FlagUnknown {
				neg, known = f.NegRisk == venue.FlagTrue, true
			}
		}
	}
	if known {
		// A market's neg-risk never changes: remember what was said (one
		// entry per instrument the simulator knows).
		c.mu.Lock()
		c.neg[token] = neg
		c.mu.Unlock()
	}
	return neg
}

func (c *clob) instrumentOrZero(token string) tradeapi.SimInstrument {
	in, _ := c.instrument(token)
	return in
}

func tickOf(in tradeapi.SimInstrument) int64 {
	if in.Tick > 0 {
		return in.Tick
	}
	return tradingRules.Tick
}

func (c *clob) tickSize(w http.ResponseWriter, r *http.Request) {
	in, ok := c.instrument(r.URL.Query().Get("token_id"))
	if !ok {
		writeErr(w, http.StatusNotFound, "market not found")
		return
	}
	f, _ := strconv.ParseFloat(dec(tickOf(in), Scale.PriceDecimals), 64)
	writeJSON(w, http.StatusOK, map[string]any{"minimum_tick_size": f})
}

// summary is the REST book summary of a token, with the venue's hash.
func (c *clob) summary(token string) (map[string]any, bool) {
	in, ok := c.instrument(token)
	if !ok {
		return nil, false
	}
	bids, asks, exNs, ok := c.ex.Book(token, -1, nil, nil)
	if !ok {
		return nil, false
	}
	b := book.New(Scale)
	if b.Replace(bids, asks) != nil {
		return nil, false
	}
	ts := strconv.FormatInt(exNs/1e6, 10)
	minSize := dec(max(in.MinSize, tradingRules.MinSize), Scale.SizeDecimals)
	tick := dec(tickOf(in), Scale.PriceDecimals)
	neg := c.negRisk(token)
	hash := BookHash(nil, HashFields{Market: in.Market, AssetID: token, Timestamp: ts, MinOrderSize: minSize, TickSize: tick, NegRisk: neg}, b)
	side := func(ls []book.Level) []map[string]string {
		out := make([]map[string]string, len(ls))
		for i, l := range ls { // worst first, best last, as the venue lists
			out[len(ls)-1-i] = map[string]string{"price": dec(l.Price, Scale.PriceDecimals), "size": dec(l.Size, Scale.SizeDecimals)}
		}
		return out
	}
	return map[string]any{"market": in.Market, "asset_id": token, "timestamp": ts, "hash": string(hash),
		"bids": side(bids), "asks": side(asks), "min_order_size": minSize, "tick_size": tick, "neg_risk": neg}, true
}

func (c *clob) getBook(w http.ResponseWriter, r *http.Request) {
	s, ok := c.summary(r.URL.Query().Get("token_id"))
	if !ok {
		writeErr(w, http.StatusNotFound, "No orderbook exists for the requested token id")
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (c *clob) postBooks(w http.ResponseWriter, r *http.Request) {
	var req []struct {
		TokenID string `json:"token_id"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil || json.Unmarshal(body, &req) != nil || len(req) > 500 {
		writeErr(w, http.StatusBadRequest, "Invalid payload")
		return
	}
	out := []map[string]any{}
	for _, q := range req {
		if s, ok := c.summary(q.TokenID); ok {
			out = append(out, s)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// clobAuthDigest is the EIP-712 digest of the ClobAuth message.
func clobAuthDigest(address, timestamp string, nonce [32]byte, chainID uint64) ([32]byte, error) {
	addr, err := ethsig.Address(address)
	if err != nil {
		return [32]byte{}, err
	}
	domain := ethsig.Struct("EIP712Domain", ethsig.Field{Type: "string", Name: "name", Value: ethsig.Str("ClobAuthDomain")},
		ethsig.Field{Type: "string", Name: "version", Value: ethsig.Str("1")},
		ethsig.Field{Type: "uint256", Name: "chainId", Value: ethsig.Uint64(chainID)})
	msg := ethsig.Struct("ClobAuth", ethsig.Field{Type: "address", Name: "address", Value: addr},
		ethsig.Field{Type: "string", Name: "timestamp", Value: ethsig.Str(timestamp)},
		ethsig.Field{Type: "uint256", Name: "nonce", Value: nonce},
		ethsig.Field{Type: "string", Name: "message", Value: ethsig.Str(authMessage)})
	return ethsig.Digest(domain, msg), nil
}

// apiKey creates or derives the API key of an L1-authenticated address:
// the same address and nonce always give the same key.
func (c *clob) apiKey(w http.ResponseWriter, r *http.Request) {
	addr := strings.ToLower(r.Header.Get("POLY_ADDRESS"))
	ts, sig := r.Header.Get("POLY_TIMESTAMP"), r.Header.Get("POLY_SIGNATURE")
	nonceText := r.Header.Get("POLY_NONCE")
	if nonceText == "" {
		nonceText = "0"
	}
	nonce, err := ethsig.ParseUint(nonceText)
	if err != nil || ts == "" {
		writeErr(w, http.StatusUnauthorized, invalidL1)
		return
	}
	ok := c.opt.AnySignature
	for _, chain := range []uint64{137, 80002} {
		d, err := clobAuthDigest(addr, ts, nonce, chain)
		if err != nil {
			break
		}
		if got, err := ethsig.RecoverHex(d, sig); err == nil && got == addr {
			ok = true
			break
		}
	}
	if !ok {
		writeErr(w, http.StatusUnauthorized, invalidL1)
		return
	}
	seed := ethsig.Keccak256([]byte("tapedeck api key"), []byte(addr), nonce[:])
	k := &creds{address: addr,
		key:        fmt.Sprintf("%x-%x-%x-%x-%x", seed[0:4], seed[4:6], seed[6:8], seed[8:10], seed[10:16]),
		secret:     base64.URLEncoding.EncodeToString(seed[16:32]),
		passphrase: passphraseOf(seed)}
	c.mu.Lock()
	if _, have := c.keys[k.key]; !have && len(c.keys) >= maxKeys {
		c.mu.Unlock()
		writeErr(w, http.StatusTooManyRequests, "too many API keys")
		return
	}
	c.keys[k.key] = k
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"apiKey": k.key, "secret": k.secret, "passphrase": k.passphrase})
}

// l2 authenticates a request with the L2 headers and calls h with the
// key's account and the body.
func (c *clob) l2(h func(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(body) > maxBody {
			writeErr(w, http.StatusBadRequest, "Invalid payload")
			return
		}
		c.mu.Lock()
		k := c.keys[r.Header.Get("POLY_API_KEY")]
		c.mu.Unlock()
		if k == nil || k.passphrase != r.Header.Get("POLY_PASSPHRASE") || !strings.EqualFold(k.address, r.Header.Get("POLY_ADDRESS")) {
			writeErr(w, http.StatusUnauthorized, unauthorized)
			return
		}
		if !c.opt.AnySignature && !validHMAC(k.secret, r.Header.Get("POLY_TIMESTAMP"), r.Method, r.URL.Path, body, r.Header.Get("POLY_SIGNATURE")) {
			writeErr(w, http.StatusUnauthorized, unauthorized)
			return
		}
		a, ok := c.ex.Account(k.key)
		if !ok {
			writeErr(w, http.StatusTooManyRequests, "too many accounts on this simulated exchange")
			return
		}
		h(w, r, k, a, body)
	}
}

// validHMAC checks the L2 signature: URL-safe base64 (padded) of
// HMAC-SHA256(base64-decoded secret, timestamp + method + path + body).
func validHMAC(secret, ts, method, path string, body []byte, sig string) bool {
	key, err := base64.URLEncoding.DecodeString(secret)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ts + method + path))
	m.Write(body)
	want := base64.URLEncoding.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(sig))
}

// signedOrder is the order body the client signs and posts.
type signedOrder struct {
	Salt          json.Number `json:"salt"`
	Maker         string      `json:"maker"`
	Signer        string      `json:"signer"`
	Taker         string      `json:"taker"`
	TokenID       string      `json:"tokenId"`
	MakerAmount   string      `json:"makerAmount"`
	TakerAmount   string      `json:"takerAmount"`
	Side          string      `json:"side"`
	Expiration    string      `json:"expiration"`
	Nonce         string      `json:"nonce"`
	FeeRateBps    string      `json:"feeRateBps"`
	SignatureType int         `json:"signatureType"`
	Signature     string      `json:"signature"`
}

type orderBody struct {
	Order     signedOrder `json:"order"`
	Owner     string      `json:"owner"`
	OrderType string      `json:"orderType"`
	PostOnly  bool        `json:"postOnly"`
	DeferExec bool        `json:"deferExec"`
}

// hash returns the order's EIP-712 digest for an exchange contract, which
// is also its order id.
func (o *signedOrder) hash(chainID uint64, contract string) ([32]byte, error) {
	var f [12][32]byte
	var err error
	u := func(i int, s string) {
		if err == nil {
			f[i], err = ethsig.ParseUint(s)
		}
	}
	a := func(i int, s string) {
		if err == nil {
			f[i], err = ethsig.Address(s)
		}
	}
	u(0, o.Salt.String())
	a(1, o.Maker)
	a(2, o.Signer)
	a(3, o.Taker)
	u(4, o.TokenID)
	u(5, o.MakerAmount)
	u(6, o.TakerAmount)
	u(7, o.Expiration)
	u(8, o.Nonce)
	u(9, o.FeeRateBps)
	side := uint64(0)
	if o.Side == sideSellWire {
		side = 1
	}
	f[10], f[11] = ethsig.Uint64(side), ethsig.Uint64(uint64(o.SignatureType))
	vc, cerr := ethsig.Address(contract)
	if err != nil || cerr != nil {
		return [32]byte{}, fmt.Errorf("invalid order")
	}
	names := []string{"salt", "maker", "signer", "taker", "tokenId", "makerAmount", "takerAmount", "expiration", "nonce", "feeRateBps", "side", "signatureType"}
	types := []string{"uint256", "address", "address", "address", "uint256", "uint256", "uint256", "uint256", "uint256", "uint256", "uint8", "uint8"}
	fields := make([]ethsig.Field, 12)
	for i := range fields {
		fields[i] = ethsig.Field{Type: types[i], Name: names[i], Value: f[i]}
	}
	domain := ethsig.Struct("EIP712Domain", ethsig.Field{Type: "string", Name: "name", Value: ethsig.Str("Polymarket CTF Exchange")},
		ethsig.Field{Type: "string", Name: "version", Value: ethsig.Str("1")},
		ethsig.Field{Type: "uint256", Name: "chainId", Value: ethsig.Uint64(chainID)},
		ethsig.Field{Type: "address", Name: "verifyingContract", Value: vc})
	return ethsig.Digest(domain, ethsig.Struct("Order", fields...)), nil
}

// verify returns the order id if the signature is the signer's for one of
// the venue's exchange contracts.
func (o *signedOrder) verify(any bool) (string, bool) {
	for _, cc := range []struct {
		chain    uint64
		contract string
	}{{137, exchangeMatic}, {137, exchangeNeg}, {80002, exchangeAmoy}, {80002, exchangeNeg}} {
		h, err := o.hash(cc.chain, cc.contract)
		if err != nil {
			return "", false
		}
		if got, err := ethsig.RecoverHex(h, o.Signature); err == nil && strings.EqualFold(got, o.Signer) {
			return "0x" + hex.EncodeToString(h[:]), true
		}
		if any {
			return "0x" + hex.EncodeToString(h[:]), true
		}
	}
	return "", false
}

// amount reads a 6-decimal integer amount.
func amount(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v > 0
}

// request converts a signed order into the simulator's terms, or the
// venue's error text.
func (c *clob) request(b *orderBody, nowWallNs int64) (tradeapi.SimOrderRequest, string) {
	o := &b.Order
	if _, ok := c.instrument(o.TokenID); !ok {
		return tradeapi.SimOrderRequest{}, "invalid order: the orderbook for token " + o.TokenID + " does not exist"
	}
	maker, ok1 := amount(o.MakerAmount)
	taker, ok2 := amount(o.TakerAmount)
	if !ok1 || !ok2 {
		return tradeapi.SimOrderRequest{}, "invalid order: amounts must be positive"
	}
	tif := b.OrderType
	if tif == "" {
		tif = "GTC"
	}
	switch tif {
	case "GTC", "GTD", "FOK", "FAK":
	default:
		return tradeapi.SimOrderRequest{}, "invalid order type " + strconv.Quote(tif)
	}
	buy := o.Side == sideBuyWire
	if !buy && o.Side != sideSellWire {
		return tradeapi.SimOrderRequest{}, "invalid order side " + strconv.Quote(o.Side)
	}
	// Amounts are at 6 decimals: price = USDC / shares, at the price scale.
	usdc, shares := maker, taker
	if !buy {
		usdc, shares = taker, maker
	}
	one := big.NewInt(book.Pow10(Scale.PriceDecimals))
	p := new(big.Int).Mul(big.NewInt(usdc), one)
	price := new(big.Int).Quo(p, big.NewInt(shares)).Int64()
	if in, _ := c.instrument(o.TokenID); tickOf(in) > 0 && (tif == "FOK" || tif == "FAK") {
		// A market order's amounts are rounded by the client: its price is
		// the nearest tick.
		t := tickOf(in)
		price = (price + t/2) / t * t
	}
	r := tradeapi.SimOrderRequest{Instrument: o.TokenID, Buy: buy, Price: price, TIF: tif, PostOnly: b.PostOnly}
	sizeScale := book.Pow10(Scale.SizeDecimals) / book.Pow10(usdcDecimals)
	if buy && (tif == "FOK" || tif == "FAK") {
		r.Amount = usdc * book.Pow10(Scale.PriceDecimals) / book.Pow10(usdcDecimals)
	} else {
		r.Size = shares * sizeScale
	}
	if tif == "GTD" {
		exp, err := strconv.ParseInt(o.Expiration, 10, 64)
		if err != nil || exp <= 0 {
			return tradeapi.SimOrderRequest{}, "invalid order: a GTD order needs an expiration"
		}
		// The client takes its expiration from the wall clock: map it to the
		// replay's (the same distance ahead of now).
		r.ExpireNs = exp*1e9 - nowWallNs + c.ex.NowNs()
	}
	return r, ""
}

// errorText is the venue's words for a simulator refusal.
func errorText(o tradeapi.SimOrder) string {
	switch o.Reason {
	case tradingRules.Reasons.FOKUnfilled:
		return "order couldn't be fully filled. FOK orders are fully filled or killed."
	case tradingRules.Reasons.FAKUnfilled:
		return "no orders found to match with FAK order. FAK orders are partially filled or killed if no match is found."
	}
	return o.Reason
}

func (c *clob) remember(account string, id uint64, hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orders[hash] = orderRef{account, id}
	m := c.hashes[account]
	if m == nil {
		m = map[uint64]string{}
		c.hashes[account] = m
	}
	m[id] = hash
}

func (c *clob) hashOf(account string, id uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hashes[account][id]
}

// place posts orders and returns the venue's responses and HTTP status.
func (c *clob) place(ctx context.Context, k *creds, a tradeapi.Account, bodies []orderBody) ([]map[string]any, int) {
	resp := make([]map[string]any, len(bodies))
	var reqs []tradeapi.SimOrderRequest
	var at []int
	var ids []string
	status := http.StatusOK
	fail := func(i int, text string) {
		resp[i] = map[string]any{"success": false, "errorMsg": text, "orderID": "", "transactionsHashes": []string{}, "status": "", "takingAmount": "", "makingAmount": ""}
		status = http.StatusBadRequest
	}
	wall := time.Now().UnixNano()
	for i := range bodies {
		b := &bodies[i]
		if b.Owner != k.key {
			fail(i, "the order owner has to be the owner of the API KEY")
			continue
		}
		if !strings.EqualFold(b.Order.Signer, k.address) {
			fail(i, "the order signer address has to be the address of the API KEY")
			continue
		}
		id, ok := b.Order.verify(c.opt.AnySignature)
		if !ok {
			fail(i, "invalid signature")
			continue
		}
		c.mu.Lock()
		_, dup := c.orders[id]
		c.mu.Unlock()
		if dup {
			fail(i, "order "+id+" is invalid. Duplicated.")
			continue
		}
		r, bad := c.request(b, wall)
		if bad != "" {
			fail(i, bad)
			continue
		}
		r.Tag = id
		reqs, at, ids = append(reqs, r), append(at, i), append(ids, id)
	}
	for j, o := range a.Place(ctx, reqs) {
		i := at[j]
		if o.ID != 0 {
			c.remember(k.key, o.ID, ids[j])
		}
		st := "live"
		switch {
		case o.Status == "rejected" || (o.Status == "cancelled" && o.Filled == 0):
			fail(i, errorText(o))
			continue
		case o.Status == "filled" || o.Filled > 0:
			st = "matched"
		}
		taking, making := "", ""
		if o.Filled > 0 {
			shares := dec(o.Filled, Scale.SizeDecimals)
			one := book.Pow10(Scale.PriceDecimals)
			usdc := dec((o.Filled*o.AvgPrice+one/2)/one, Scale.SizeDecimals)
			taking, making = shares, usdc
			if !o.Buy {
				taking, making = usdc, shares
			}
		}
		resp[i] = map[string]any{"success": true, "errorMsg": "", "orderID": ids[j], "transactionsHashes": []string{},
			"status": st, "takingAmount": taking, "makingAmount": making}
	}
	return resp, status
}

func (c *clob) postOrder(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte) {
	var b orderBody
	if err := json.Unmarshal(body, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "Invalid order payload")
		return
	}
	resp, status := c.place(r.Context(), k, a, []orderBody{b})
	if status != http.StatusOK {
		writeErr(w, status, resp[0]["errorMsg"].(string))
		return
	}
	writeJSON(w, status, resp[0])
}

func (c *clob) postOrders(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte) {
	var bs []orderBody
	if err := json.Unmarshal(body, &bs); err != nil || len(bs) > maxBatch {
		writeErr(w, http.StatusBadRequest, "Invalid order payload")
		return
	}
	resp, _ := c.place(r.Context(), k, a, bs)
	writeJSON(w, http.StatusOK, resp)
}

// cancel cancels orders by id and answers {canceled, not_canceled}.
func (c *clob) cancel(ctx context.Context, w http.ResponseWriter, k *creds, a tradeapi.Account, hashes []string) {
	canceled := []string{}
	not := map[string]string{}
	var ids []uint64
	var which []string
	for _, h := range hashes {
		c.mu.Lock()
		ref, ok := c.orders[h]
		c.mu.Unlock()
		if !ok || ref.account != k.key {
			not[h] = "Order not found"
			continue
		}
		ids, which = append(ids, ref.id), append(which, h)
	}
	for i, why := range a.Cancel(ctx, ids) {
		switch {
		case why == "":
			canceled = append(canceled, which[i])
		case strings.Contains(why, "filled"):
			not[which[i]] = "order already matched"
		default:
			not[which[i]] = "order can't be found - already canceled or matched"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"canceled": canceled, "not_canceled": not})
}

func (c *clob) cancelOrder(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte) {
	var req struct {
		OrderID string `json:"orderID"`
	}
	if json.Unmarshal(body, &req) != nil || req.OrderID == "" {
		writeErr(w, http.StatusBadRequest, "Invalid order payload")
		return
	}
	c.cancel(r.Context(), w, k, a, []string{req.OrderID})
}

func (c *clob) cancelOrders(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte) {
	var ids []string
	if json.Unmarshal(body, &ids) != nil || len(ids) > 3000 {
		writeErr(w, http.StatusBadRequest, "Invalid order payload")
		return
	}
	c.cancel(r.Context(), w, k, a, ids)
}

func (c *clob) openHashes(k *creds, a tradeapi.Account, market, asset string) []string {
	var out []string
	markets := map[string]string{}
	for _, in := range c.ex.Instruments() {
		markets[in.ID] = in.Market
	}
	for _, o := range a.Orders(nil, true) {
		if (asset == "" || o.Instrument == asset) && (market == "" || markets[o.Instrument] == market) {
			if h := c.hashOf(k.key, o.ID); h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}

func (c *clob) cancelAll(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, _ []byte) {
	c.cancel(r.Context(), w, k, a, c.openHashes(k, a, "", ""))
}

func (c *clob) cancelMarket(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, body []byte) {
	var req struct {
		Market  string `json:"market"`
		AssetID string `json:"asset_id"`
	}
	if json.Unmarshal(body, &req) != nil {
		writeErr(w, http.StatusBadRequest, "Invalid payload")
		return
	}
	c.cancel(r.Context(), w, k, a, c.openHashes(k, a, req.Market, req.AssetID))
}

// orderJSON is an order as GET /data/order(s) gives it.
func (c *clob) orderJSON(k *creds, o tradeapi.SimOrder, market string) map[string]any {
	side := sideBuyWire
	if !o.Buy {
		side = sideSellWire
	}
	st := map[string]string{"open": "LIVE", "pending": "LIVE", "filled": "MATCHED", "cancelled": "CANCELED",
		"expired": "CANCELED", "rejected": "CANCELED"}[o.Status]
	size := o.Size
	if size == 0 && o.Amount > 0 && o.Price > 0 {
		size = o.Filled
	}
	exp := "0"
	if o.ExpireNs != 0 {
		exp = strconv.FormatInt(o.ExpireNs/1e9, 10)
	}
	return map[string]any{"id": c.hashOf(k.key, o.ID), "status": st, "owner": k.key, "maker_address": k.address,
		"market": market, "asset_id": o.Instrument, "side": side, "original_size": dec(size, Scale.SizeDecimals),
		"size_matched": dec(o.Filled, Scale.SizeDecimals), "price": dec(o.Price, Scale.PriceDecimals),
		"associate_trades": []string{}, "outcome": "", "created_at": o.SubmitNs / 1e9, "expiration": exp, "order_type": o.TIF}
}

func (c *clob) markets() map[string]string {
	m := map[string]string{}
	for _, in := range c.ex.Instruments() {
		m[in.ID] = in.Market
	}
	return m
}

func (c *clob) openOrders(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, _ []byte) {
	q := r.URL.Query()
	markets := c.markets()
	data := []map[string]any{}
	for _, o := range a.Orders(nil, true) {
		h := c.hashOf(k.key, o.ID)
		if (q.Get("id") != "" && q.Get("id") != h) || (q.Get("asset_id") != "" && q.Get("asset_id") != o.Instrument) ||
			(q.Get("market") != "" && q.Get("market") != markets[o.Instrument]) {
			continue
		}
		data = append(data, c.orderJSON(k, o, markets[o.Instrument]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "next_cursor": endCursor, "limit": len(data), "count": len(data)})
}

func (c *clob) getOrder(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, _ []byte) {
	h := r.PathValue("id")
	c.mu.Lock()
	ref, ok := c.orders[h]
	c.mu.Unlock()
	if !ok || ref.account != k.key {
		writeJSON(w, http.StatusOK, nil)
		return
	}
	o, _ := a.Order(ref.id, "")
	writeJSON(w, http.StatusOK, c.orderJSON(k, o, c.markets()[o.Instrument]))
}

func (c *clob) tradeJSON(k *creds, f tradeapi.SimFill, market string) map[string]any {
	side := sideBuyWire
	if !f.Buy {
		side = sideSellWire
	}
	ts := strconv.FormatInt(f.RecvNs/1e9, 10)
	trader := "TAKER"
	if f.Maker {
		trader = "MAKER"
	}
	return map[string]any{"id": fmt.Sprintf("%s-%d", k.key[:8], f.Seq), "taker_order_id": c.hashOf(k.key, f.OrderID),
		"market": market, "asset_id": f.Instrument, "side": side, "size": dec(f.Size, Scale.SizeDecimals),
		"fee_rate_bps": strconv.FormatInt(feeBps(c.instrumentOrZero(f.Instrument)), 10), "price": dec(f.Price, Scale.PriceDecimals), "status": "CONFIRMED", "match_time": ts,
		"last_update": ts, "outcome": "", "bucket_index": 0, "owner": k.key, "maker_address": k.address,
		"maker_orders": []any{}, "transaction_hash": fmt.Sprintf("0x%064x", f.Seq), "trader_side": trader}
}

func (c *clob) trades(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, _ []byte) {
	q := r.URL.Query()
	markets := c.markets()
	data := []map[string]any{}
	for _, f := range a.Fills(nil) {
		if (q.Get("asset_id") != "" && q.Get("asset_id") != f.Instrument) || (q.Get("market") != "" && q.Get("market") != markets[f.Instrument]) {
			continue
		}
		if q.Get("id") != "" && q.Get("id") != fmt.Sprintf("%s-%d", k.key[:8], f.Seq) {
			continue
		}
		data = append(data, c.tradeJSON(k, f, markets[f.Instrument]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "next_cursor": endCursor, "limit": len(data), "count": len(data)})
}

func (c *clob) balance(w http.ResponseWriter, r *http.Request, k *creds, a tradeapi.Account, _ []byte) {
	q := r.URL.Query()
	st := a.State()
	var bal int64
	switch q.Get("asset_type") {
	case "CONDITIONAL":
		for _, p := range st.Positions {
			if p.Instrument == q.Get("token_id") {
				bal = p.Size / (book.Pow10(Scale.SizeDecimals) / book.Pow10(usdcDecimals))
			}
		}
	default:
		bal = st.Cash / book.Pow10(10-usdcDecimals)
	}
	big := "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	writeJSON(w, http.StatusOK, map[string]any{"balance": strconv.FormatInt(bal, 10),
		"allowances": map[string]string{exchangeMatic: big, exchangeNeg: big}})
}

func passphraseOf(seed [32]byte) string {
	h := ethsig.Keccak256(seed[:], []byte("passphrase"))
	return hex.EncodeToString(h[:16])
}

func (t *tradingAPI) NewSession(ex tradeapi.Exchange, opt tradeapi.TradingOptions, push func([]byte)) tradeapi.TradingSession {
	return &userSession{c: t.clobOf(ex, opt), push: push}
}

// userSession is the user channel of one WebSocket connection: after an
// authenticated subscribe, the account's order and trade events.
type userSession struct {
	c    *clob
	push func([]byte)

	mu     sync.Mutex
	stop   func()
	placed map[uint64]bool // orders whose PLACEMENT was sent
}

// maxPlaced bounds the orders a user channel remembers.
const maxPlaced = 1 << 16

func (s *userSession) Handle(msg []byte) ([][]byte, bool) {
	var req struct {
		Auth *struct {
			APIKey     string `json:"apiKey"`
			Secret     string `json:"secret"`
			Passphrase string `json:"passphrase"`
		} `json:"auth"`
		Markets []string `json:"markets"`
		Type    string   `json:"type"`
	}
	if json.Unmarshal(msg, &req) != nil || req.Auth == nil || !strings.EqualFold(req.Type, "user") {
		return nil, false
	}
	c := s.c
	c.mu.Lock()
	k := c.keys[req.Auth.APIKey]
	c.mu.Unlock()
	if k == nil || k.secret != req.Auth.Secret || k.passphrase != req.Auth.Passphrase {
		return [][]byte{[]byte(`{"error":"` + unauthorized + `"}`)}, true
	}
	a, ok := c.ex.Account(k.key)
	if !ok {
		return [][]byte{[]byte(`{"error":"too many accounts"}`)}, true
	}
	want := map[string]bool{}
	for _, m := range req.Markets {
		want[m] = true
	}
	markets := c.markets()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	s.placed = map[uint64]bool{}
	s.stop = a.Watch(func(u tradeapi.SimUpdate) {
		market := markets[u.Order.Instrument]
		if (len(want) > 0 && !want[market]) || (u.Fill == nil && u.Order.Status == "rejected") {
			return // the venue tells nothing of an order it refused
		}
		s.push(s.event(k, u, market))
	})
	return nil, true
}

// event is one user-channel message for an update.
func (s *userSession) event(k *creds, u tradeapi.SimUpdate, market string) []byte {
	o := u.Order
	side := sideBuyWire
	if !o.Buy {
		side = sideSellWire
	}
	// Never call the Exchange here: this runs under its lock.
	ts := strconv.FormatInt(max(o.DoneNs, o.SubmitNs)/1e6, 10)
	if f := u.Fill; f != nil {
		fs := sideBuyWire
		if !f.Buy {
			fs = sideSellWire
		}
		b, _ := json.Marshal(map[string]any{"event_type": "trade", "type": "TRADE", "id": fmt.Sprintf("%s-%d", k.key[:8], f.Seq),
			"asset_id": f.Instrument, "market": market, "side": fs, "size": dec(f.Size, Scale.SizeDecimals),
			"price": dec(f.Price, Scale.PriceDecimals), "status": "MATCHED", "taker_order_id": o.Tag, "maker_orders": []any{},
			"owner": k.key, "trade_owner": k.key, "outcome": "", "matchtime": strconv.FormatInt(f.RecvNs/1e9, 10),
			"last_update": strconv.FormatInt(f.RecvNs/1e9, 10), "timestamp": ts})
		return b
	}
	typ := "UPDATE"
	switch {
	case o.Status == "cancelled" || o.Status == "expired" || o.Status == "rejected":
		typ = "CANCELLATION"
	case !s.placed[o.ID]:
		typ = "PLACEMENT"
		if len(s.placed) < maxPlaced {
			s.placed[o.ID] = true
		}
	}
	b, _ := json.Marshal(map[string]any{"event_type": "order", "type": typ, "id": o.Tag, "asset_id": o.Instrument,
		"market": market, "side": side, "price": dec(o.Price, Scale.PriceDecimals), "original_size": dec(o.Size, Scale.SizeDecimals),
		"size_matched": dec(o.Filled, Scale.SizeDecimals), "owner": k.key, "order_owner": k.key, "associate_trades": nil,
		"outcome": "", "timestamp": ts})
	return b
}

func (s *userSession) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}
