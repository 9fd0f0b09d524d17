package export

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/venue"
)

// The directories under data/ of Nautilus's catalog (persistence/funcs.py
// class_to_filename: the class name in snake case, OrderBookDelta plural).
const (
	NautilusDeltasDir  = "order_book_deltas"
	NautilusQuotesDir  = "quote_tick"
	NautilusTradesDir  = "trade_tick"
	NautilusBinaryDir  = "binary_option"
	NautilusPerpDir    = "crypto_perpetual"
	NautilusCurPairDir = "currency_pair"
)

// NautilusFileName is the name Nautilus's catalog gives a file of rows with
// ts_init from first to last (parquet.py _timestamps_to_filename: ISO 8601
// with nanoseconds, ':' and '.' made '-').
func NautilusFileName(firstNs, lastNs int64) string {
	return nautFileTime(firstNs) + "_" + nautFileTime(lastNs) + ".parquet"
}

func nautFileTime(ns int64) string {
	return strings.ReplaceAll(time.Unix(0, ns).UTC().Format("2006-01-02T15-04-05.000000000Z"), ".", "-")
}

// NautilusDir is the directory of an instrument's files of a kind, relative
// to the catalog's root (persistence/funcs.py urisafe_identifier: the id
// with '/' removed).
func NautilusDir(kind, id string) string {
	return "data/" + kind + "/" + strings.ReplaceAll(id, "/", "")
}

// nautDef is an instrument as Nautilus defines it: its id, precisions and,
// when the recording says what it is, the class and fields of its
// definition.
type nautDef struct {
	id             string
	kind           string // its directory (NautilusBinaryDir, …); "" none
	class          string // BinaryOption, CryptoPerpetual, CurrencyPair
	raw            string
	pxPrec, szPrec uint8
	priceInc       string
	sizeInc        string
	currency       string // binary option: its currency; else the quote
	base           string
	settlement     string
	takerFee       string
	outcome, desc  string // "" null
	info           []byte // nil null
	tsNs           int64
}

// definitions works out every instrument's id, precisions and definition
// from what the recording says of it (the instruments table's facts) and
// from its rows.
func (n *Nautilus) definitions() map[*nautInst]*nautDef {
	defs := make(map[*nautInst]*nautDef, len(n.all))
	for _, in := range n.all {
		var f venue.Instrument
		var rows []instRow
		if h := n.facts.insts[in.venue+"\x00"+in.name]; h != nil {
			rows = h.rows
		}
		if len(rows) > 0 {
			f = rows[len(rows)-1].info
		} else {
			f = venue.NewInstrument(in.name, "")
		}
		d := &nautDef{raw: in.name, pxPrec: in.pxDec, szPrec: in.szDec, tsNs: in.first[0]}
		for k := range in.n {
			if in.n[k] > 0 && (d.tsNs == 0 || in.first[k] < d.tsNs) {
				d.tsNs = in.first[k]
			}
		}
		if len(rows) > 0 {
			d.tsNs = rows[0].localNs
		}
		// Price precision: what the venue says prices may have (its finest
		// tick over the recording), and at least what the rows have.
		if f.PriceDecimals >= 0 {
			d.pxPrec = max(d.pxPrec, uint8(f.PriceDecimals))
		}
		for _, r := range rows {
			if r.info.TickSize > 0 {
				d.pxPrec = max(d.pxPrec, decimals(r.info.TickSize, in.scale.PriceDecimals))
			}
		}
		switch {
		case f.SzDecimals >= 0:
			d.szPrec = max(d.szPrec, uint8(f.SzDecimals))
		case f.SizeStep > 0:
			d.szPrec = max(d.szPrec, decimals(f.SizeStep, in.scale.SizeDecimals))
		default:
			d.szPrec = max(d.szPrec, in.scale.SizeDecimals)
		}
		if f.TickSize > 0 {
			d.priceInc = nautDecText(f.TickSize, in.scale.PriceDecimals, d.pxPrec)
		} else {
			d.priceInc = nautDecText(1, d.pxPrec, d.pxPrec)
		}
		if f.SizeStep > 0 && decimals(f.SizeStep, in.scale.SizeDecimals) <= d.szPrec {
			d.sizeInc = nautDecText(f.SizeStep, in.scale.SizeDecimals, d.szPrec)
		} else {
			d.sizeInc = nautDecText(1, d.szPrec, d.szPrec)
		}
		d.takerFee = "0"
		if f.TakerFeeRate >= 0 {
			d.takerFee = strconv.FormatFloat(f.TakerFeeRate, 'f', -1, 64)
		}
		sym := in.name
		info := map[string]any{}
		switch f.Type {
		case "binary_option":
			market := in.market
			if market == "" {
				market = f.Market
			}
			if market != "" {
				sym = market + "-" + in.name
				info["condition_id"] = market
			} else {
				n.notes = append(n.notes, fmt.Sprintf("%s: its market (condition id) is unknown: id %s.%s", in.name, in.name, strings.ToUpper(in.venue)))
			}
			d.kind, d.class = NautilusBinaryDir, "BinaryOption"
			d.currency = "pUSD" // Polymarket's collateral, as Nautilus's adapter has it
			d.outcome, d.desc = f.Outcome, f.Name
			info["token_id"] = in.name
			if f.Slug != "" {
				info["market_slug"] = f.Slug
			}
			if f.NegRisk != venue.FlagUnknown {
				info["neg_risk"] = f.NegRisk == venue.FlagTrue
			}
			if f.OutcomeIndex >= 0 {
				info["outcome_index"] = f.OutcomeIndex
			}
		case "perpetual":
			d.base, d.currency, d.settlement = f.Base, f.Quote, "USDC"
			if d.base == "" {
				d.base = in.name
			}
			if d.currency == "" {
				d.currency = "USD"
			}
			sym = nautSymbol(d.base) + "-" + nautSymbol(d.currency) + "-PERP"
			d.kind, d.class = NautilusPerpDir, "CryptoPerpetual"
		case "spot":
			d.base, d.currency = f.Base, f.Quote
			if d.base == "" || d.currency == "" {
				if b, q, ok := strings.Cut(in.name, "/"); ok {
					d.base, d.currency = b, q
				}
			}
			if d.base == "" || d.currency == "" {
				n.notes = append(n.notes, fmt.Sprintf("%s: its base and quote are unknown (no spot listing recorded): id %s-SPOT.%s, no definition", in.name, in.name, strings.ToUpper(in.venue)))
				sym = in.name + "-SPOT"
				break
			}
			sym = nautSymbol(d.base) + "-" + nautSymbol(d.currency) + "-SPOT"
			d.kind, d.class = NautilusCurPairDir, "CurrencyPair"
		default:
			n.notes = append(n.notes, fmt.Sprintf("%s: the recording does not say what it is: id %s.%s, no definition", in.name, in.name, strings.ToUpper(in.venue)))
		}
		if f.SzDecimals >= 0 && d.class != "BinaryOption" {
			info["sz_decimals"] = f.SzDecimals
		}
		if f.MaxLeverage > 0 {
			info["max_leverage"] = f.MaxLeverage
		}
		if len(info) > 0 {
			d.info, _ = json.Marshal(info) // sorted keys: deterministic
		}
		d.id = sym + "." + strings.ToUpper(in.venue)
		defs[in] = d
	}
	return defs
}

// nautSymbol is a symbol part as Nautilus's Hyperliquid adapter makes it
// (sanitize_symbol: '*' and '?' become 'x').
func nautSymbol(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '*' || r == '?' {
			return 'x'
		}
		return r
	}, s)
}

// nautDecText is v at dec decimals as text with exactly prec decimals (v must
// need at most prec).
func nautDecText(v int64, dec, prec uint8) string {
	s := book.FormatDecimal(v, dec)
	have := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		have = len(s) - i - 1
	} else if prec > 0 {
		s += "."
	}
	return s + strings.Repeat("0", max(0, int(prec)-have))
}

// nautColumns are the columns of a Nautilus data file of kind k at width w
// (crates/serialization/src/arrow/{delta,quote,trade}.rs get_schema).
func nautColumns(k int, w int) []columnar.Column {
	fx := func(name string) columnar.Column {
		return columnar.Column{Name: name, Type: columnar.FixedBytes, Width: w}
	}
	u8 := func(name string) columnar.Column { return columnar.Column{Name: name, Type: columnar.Uint8} }
	u64 := func(name string) columnar.Column { return columnar.Column{Name: name, Type: columnar.Uint64} }
	switch k {
	case nautDelta:
		return []columnar.Column{u8("action"), u8("side"), fx("price"), fx("size"), u64("order_id"), u8("flags"),
			u64("sequence"), u64("ts_event"), u64("ts_init")}
	case nautQuote:
		return []columnar.Column{fx("bid_price"), fx("ask_price"), fx("bid_size"), fx("ask_size"), u64("ts_event"), u64("ts_init")}
	default:
		return []columnar.Column{fx("price"), fx("size"), u8("aggressor_side"), {Name: "trade_id", Type: columnar.String},
			u64("ts_event"), u64("ts_init")}
	}
}

var nautDirs = [nautKinds]string{nautDelta: NautilusDeltasDir, nautQuote: NautilusQuotesDir, nautTrade: NautilusTradesDir}

// writeInst writes in's data files and its definition.
func (n *Nautilus) writeInst(in *nautInst, d *nautDef) error {
	for k := range in.n {
		if in.n[k] == 0 {
			continue
		}
		if err := n.writeData(in, d, k); err != nil {
			return err
		}
	}
	if d.kind == "" || d.tsNs == 0 {
		return nil // nothing says what it is, or nothing of it was written
	}
	w, err := n.open(d.kind, d.id, d.tsNs, d.tsNs)
	if err != nil {
		return err
	}
	return n.writeDef(w, d)
}

func (n *Nautilus) writeData(in *nautInst, d *nautDef, k int) error {
	w, err := n.open(nautDirs[k], d.id, in.first[k], in.last[k])
	if err != nil {
		return err
	}
	sc := columnar.TypedSchema{Name: "nautilus." + nautDirs[k], Columns: nautColumns(k, n.prec.bytes()), Metadata: map[string]string{
		"instrument_id":   d.id,
		"price_precision": strconv.Itoa(int(d.pxPrec)),
		"size_precision":  strconv.Itoa(int(d.szPrec)),
	}}
	t, err := columnar.NewTypedTable(w, sc, columnar.Parquet, n.cfg.out)
	if err != nil {
		return err
	}
	px, sz := in.scale.PriceDecimals, in.scale.SizeDecimals
	var buf [4][16]byte
	raw := func(i int, v int64, dec uint8) ([]byte, error) {
		if !nautFits(v, dec, n.prec) {
			return nil, fmt.Errorf("export: nautilus: %s: %s does not fit Nautilus's %d-byte integers", d.id, book.FormatDecimal(v, dec), n.prec.bytes())
		}
		return nautRaw(buf[i][:0], v, dec, n.prec), nil
	}
	for i := range in.rows {
		r := &in.rows[i]
		if int(r.kind) != k {
			continue
		}
		var vals [4][]byte
		var err error
		for j, v := range [4]int64{r.a, r.b, r.c, r.d} {
			dec := px
			if j&1 == 1 {
				dec = sz
			}
			if vals[j], err = raw(j, v, dec); err != nil {
				return err
			}
		}
		switch k {
		case nautDelta:
			t.Uint8(0, r.action)
			t.Uint8(1, r.side)
			t.Bytes(2, vals[0])
			t.Bytes(3, vals[1])
			t.Uint64(4, 0)
			t.Uint8(5, r.flags)
			t.Uint64(6, r.seq)
			t.Uint64(7, uint64(r.tsEvent))
			t.Uint64(8, uint64(r.tsInit))
		case nautQuote:
			t.Bytes(0, vals[0])
			t.Bytes(1, vals[2])
			t.Bytes(2, vals[1])
			t.Bytes(3, vals[3])
			t.Uint64(4, uint64(r.tsEvent))
			t.Uint64(5, uint64(r.tsInit))
		default:
			t.Bytes(0, vals[0])
			t.Bytes(1, vals[1])
			t.Uint8(2, r.side)
			t.String(3, r.id)
			t.Uint64(4, uint64(r.tsEvent))
			t.Uint64(5, uint64(r.tsInit))
		}
		if err := t.EndRow(); err != nil {
			return err
		}
	}
	if err := t.Close(); err != nil {
		return err
	}
	n.rows += t.Rows()
	return nil
}

// writeDef writes d's definition: the columns of Nautilus's Arrow schema
// of its class (crates/serialization/src/arrow/instrument/*.rs, whose
// order and names the Python catalog's instruments.py also reads), with
// "class" in the metadata.
func (n *Nautilus) writeDef(w io.Writer, d *nautDef) error {
	str := func(name string) columnar.Column { return columnar.Column{Name: name, Type: columnar.String} }
	opt := func(name string) columnar.Column {
		return columnar.Column{Name: name, Type: columnar.String, Nullable: true}
	}
	u8 := func(name string) columnar.Column { return columnar.Column{Name: name, Type: columnar.Uint8} }
	u64 := func(name string) columnar.Column { return columnar.Column{Name: name, Type: columnar.Uint64} }
	var cols []columnar.Column
	type val struct {
		s    string
		null bool
		u    uint64
		b    bool
		by   []byte
	}
	var vals []val
	add := func(c columnar.Column, v val) {
		cols = append(cols, c)
		vals = append(vals, v)
	}
	add(str("id"), val{s: d.id})
	add(str("raw_symbol"), val{s: d.raw})
	switch d.class {
	case "BinaryOption":
		add(str("asset_class"), val{s: "Alternative"})
		add(str("currency"), val{s: d.currency})
	case "CryptoPerpetual":
		add(str("base_currency"), val{s: d.base})
		add(str("quote_currency"), val{s: d.currency})
		add(str("settlement_currency"), val{s: d.settlement})
		add(columnar.Column{Name: "is_inverse", Type: columnar.Bool}, val{b: false})
	default:
		add(str("base_currency"), val{s: d.base})
		add(str("quote_currency"), val{s: d.currency})
	}
	add(u8("price_precision"), val{u: uint64(d.pxPrec)})
	add(u8("size_precision"), val{u: uint64(d.szPrec)})
	add(str("price_increment"), val{s: d.priceInc})
	add(str("size_increment"), val{s: d.sizeInc})
	if d.class == "BinaryOption" {
		add(u64("activation_ns"), val{})
		add(u64("expiration_ns"), val{})
		add(str("maker_fee"), val{s: "0"})
		add(str("taker_fee"), val{s: d.takerFee})
		add(opt("max_quantity"), val{null: true})
		add(opt("min_quantity"), val{null: true})
		add(opt("outcome"), val{s: d.outcome, null: d.outcome == ""})
		add(opt("description"), val{s: d.desc, null: d.desc == ""})
	} else {
		add(str("multiplier"), val{s: "1"})
		for _, c := range []string{"lot_size", "max_quantity", "min_quantity", "max_notional", "min_notional", "max_price", "min_price"} {
			add(opt(c), val{null: true})
		}
		add(str("margin_init"), val{s: "0"})
		add(str("margin_maint"), val{s: "0"})
		add(str("maker_fee"), val{s: "0"})
		add(str("taker_fee"), val{s: d.takerFee})
	}
	add(opt("tick_scheme"), val{null: true})
	add(columnar.Column{Name: "info", Type: columnar.Binary, Nullable: true}, val{by: d.info, null: d.info == nil})
	add(u64("ts_event"), val{u: uint64(d.tsNs)})
	add(u64("ts_init"), val{u: uint64(d.tsNs)})
	t, err := columnar.NewTypedTable(w, columnar.TypedSchema{Name: "nautilus." + d.kind, Columns: cols, Metadata: map[string]string{"class": d.class}},
		columnar.Parquet, n.cfg.out)
	if err != nil {
		return err
	}
	for i, c := range cols {
		v := vals[i]
		switch {
		case v.null:
			t.Null(i)
		case c.Type == columnar.String:
			t.String(i, v.s)
		case c.Type == columnar.Uint8:
			t.Uint8(i, uint8(v.u))
		case c.Type == columnar.Uint64:
			t.Uint64(i, v.u)
		case c.Type == columnar.Bool:
			t.Bool(i, v.b)
		case c.Type == columnar.Binary:
			t.Bytes(i, v.by)
		}
	}
	if err := t.EndRow(); err != nil {
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	n.rows++
	return nil
}
