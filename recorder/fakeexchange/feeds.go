package fakeexchange

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"
)

// The frames are real captures copied from the shared fixtures; see
// testdata/PROVENANCE.md for where each comes from.
//
//go:embed testdata/*.ndjson testdata/*.json
var fixtures embed.FS

func lines(name string) [][]byte {
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		panic(fmt.Sprintf("fakeexchange: embedded fixture %s: %v", name, err)) // a build defect
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func file(name string) []byte {
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		panic(fmt.Sprintf("fakeexchange: embedded fixture %s: %v", name, err))
	}
	return b
}

// Token ids and coins the default configurations know.
const (
	// PolymarketStreamAsset is the token id of the real (semi-synthetic)
	// polypy stream the Polymarket feed is built from.
	PolymarketStreamAsset = "72936048731589292555781174533757608024096898681344338816447372274344589246891"
	// PolymarketOtherAsset is a second real token id (the NO side in the
	// test market list).
	PolymarketOtherAsset = "101155325224907042624192777106604175185803921887395325080529159889944296783944"
	// PolymarketSlug names the market of both assets in the Gamma list.
	PolymarketSlug = "polypy-stream-market"
	// bestBidAskAsset is the token id of the best_bid_ask docs example.
	bestBidAskAsset = "85354956062430465315924116860125388538595433819574542752031640332592237464430"
)

// PolymarketNewMarket returns a real new_market frame and the token ids it
// announces; PolymarketResolved the matching market_resolved frame.
func PolymarketNewMarket() ([]byte, []string) {
	return lines("nautilus_ws_misc_events.ndjson")[3], []string{
		"76043073756653678226373981964075571318267289248134717369284518995922789326425",
		"31690934263385727664202099278545688007799199447969475608906331829650099442770"}
}

// PolymarketResolved returns the real market_resolved frame of the market
// PolymarketNewMarket announces.
func PolymarketResolved() []byte { return lines("nautilus_ws_misc_events.ndjson")[4] }

// PolymarketConfig is a Polymarket market channel serving the real polypy
// stream (initial-dump book, price_change, last_trade_price, book,
// tick_size_change) and a best_bid_ask event, for any subscribed asset, and
// a Gamma market list of three markets (one closed).
func PolymarketConfig() Config {
	stream := lines("polypy_semisynthetic_stream_single_asset.ndjson")
	snap := bytes.TrimSuffix(bytes.TrimPrefix(stream[0], []byte{'['}), []byte{']'})
	var feed []Template
	for _, f := range stream[1:] {
		feed = append(feed, Template{Frame: f, ID: PolymarketStreamAsset})
	}
	feed = append(feed, Template{Frame: lines("nautilus_ws_misc_events.ndjson")[2], ID: bestBidAskAsset})
	return Config{
		Venue:    Polymarket,
		Snapshot: Template{Frame: snap, ID: PolymarketStreamAsset},
		Feed:     map[string][]Template{"market": feed},
		Markets:  file("gamma_markets.json"),
		Summary:  polymarketSummary(),
	}
}

// WithoutHashes returns cfg with every Polymarket book hash it serves (the
// snapshot's, the feed's, the REST summaries') empty. PolymarketConfig's
// hashes are of 2024 books in the venue's form of then and of another
// asset's summary: served for any asset they describe none of the books a
// client rebuilds, so a decoder judging hashes as the venue computes them
// confirms mismatches and marks those books not valid (which is what a test
// of the heals wants). A test of something else whose books must stay valid
// serves them without hashes, which no check claims anything about. The
// generated sessions (venue/<venue>/sample) hash every book as the venue does.
func WithoutHashes(cfg Config) Config {
	cfg.Snapshot.Frame = blankHashes(cfg.Snapshot.Frame)
	cfg.Summary.Frame = blankHashes(cfg.Summary.Frame)
	feed := make(map[string][]Template, len(cfg.Feed))
	for ch, ts := range cfg.Feed {
		out := make([]Template, len(ts))
		for i, t := range ts {
			out[i] = Template{Frame: blankHashes(t.Frame), ID: t.ID}
		}
		feed[ch] = out
	}
	cfg.Feed = feed
	books := make(map[string][]byte, len(cfg.Books))
	for id, b := range cfg.Books {
		books[id] = blankHashes(b)
	}
	cfg.Books = books
	return cfg
}

// hashValue matches a book hash and its value as the fixtures write it
// (not a transaction_hash).
var hashValue = regexp.MustCompile(`"hash": ?"[0-9A-Fa-fx]*"`)

// blankHashes returns a copy of frame with every book hash empty.
func blankHashes(frame []byte) []byte {
	if frame == nil {
		return nil
	}
	return hashValue.ReplaceAll(frame, []byte(`"hash":""`))
}

// PolymarketHashAsset is the token id of the real REST book summary the
// Polymarket configurations serve; only for it does the summary's hash match.
const PolymarketHashAsset = "94022367472047775158269173293876979533288470167463650966689320774843018181757"

func polymarketSummary() Template {
	return Template{Frame: lines("polypy_hash_vector_rest_book_summaries_2025-10.ndjson")[0], ID: PolymarketHashAsset}
}

// PolymarketHashConfig is a Polymarket market channel whose books can be
// hash-checked on replay: the REST book summary is the real one of
// PolymarketHashAsset, and the WebSocket book sent on subscribe carries the
// same levels one second later, with the hash the venue would give it
// (testdata/polymarket_hash_book_derived.ndjson: polymarket.BookHash over the
// summary's min_order_size, tick_size and neg_risk, which a WebSocket book
// lacks; TestDerivedHashBook derives it again). No other data is sent; only
// PolymarketHashAsset's hashes match.
func PolymarketHashConfig() Config {
	return Config{
		Venue:    Polymarket,
		Snapshot: Template{Frame: lines("polymarket_hash_book_derived.ndjson")[0], ID: PolymarketHashAsset},
		Summary:  polymarketSummary(),
		Markets:  file("gamma_markets.json"),
	}
}

// HyperliquidConfig is a Hyperliquid WebSocket serving real l2Book, bbo,
// trades, activeAssetCtx, candle and allMids frames for any subscribed coin,
// and a meta/spotMeta listing BTC, ETH, SOL, HYPE, a delisted FTM, PURR/USDC
// and @107.
func HyperliquidConfig() Config {
	arb := lines("arbitrage_observatory_probe_2026-09_core.ndjson")
	obs := lines("order_book_server_ack_l2book_trades_2025-07.ndjson")
	bbo := lines("jkorf_bbo_2025-12.ndjson")
	mids := lines("jkorf_allmids_trimmed_2025-12.ndjson")
	return Config{
		Venue: Hyperliquid,
		Feed: map[string][]Template{
			"l2Book":         {{obs[1], "BTC"}, {arb[1], "BTC"}},
			"bbo":            {{arb[2], "BTC"}, {bbo[1], "HYPE"}},
			"activeAssetCtx": {{arb[3], "BTC"}},
			"trades":         {{arb[4], "BTC"}, {obs[2], "BTC"}},
			"candle":         {{arb[5], "BTC"}},
			"allMids":        {{mids[1], ""}},
		},
		Meta:     file("hl_meta.json"),
		SpotMeta: file("hl_spot_meta.json"),
	}
}
