package polymarket

// The keys the decoder reads, as small codes: a key is matched in place
// against the few known keys starting with its first byte, so the common case
// neither scans the key as a string nor runs a string switch over it.

type keyCode uint8

const (
	kcOther keyCode = iota
	kcEventType
	kcAssetID
	kcMarket
	kcHash
	kcTimestamp
	kcPrice
	kcSize
	kcSide
	kcBestBid
	kcBestAsk
	kcNewTick
	kcTickSize
	kcMinOrder
	kcLastTrade
	kcNegRisk
	kcBids
	kcAsks
	kcPriceChanges
	kcChanges
	kcTxHash
	numKeyCodes
)

// keyNames are the JSON keys of the codes, also used to name fields in errors.
var keyNames = [numKeyCodes]string{
	kcEventType:    "event_type",
	kcAssetID:      "asset_id",
	kcMarket:       "market",
	kcHash:         "hash",
	kcTimestamp:    "timestamp",
	kcPrice:        "price",
	kcSize:         "size",
	kcSide:         "side",
	kcBestBid:      "best_bid",
	kcBestAsk:      "best_ask",
	kcNewTick:      "new_tick_size",
	kcTickSize:     "tick_size",
	kcMinOrder:     "min_order_size",
	kcLastTrade:    "last_trade_price",
	kcNegRisk:      "neg_risk",
	kcBids:         "bids",
	kcAsks:         "asks",
	kcPriceChanges: "price_changes",
	kcChanges:      "changes",
	kcTxHash:       "transaction_hash",
}

// keysByFirst lists the codes whose key starts with a given byte.
var keysByFirst = func() (t [256][]keyCode) {
	for kc := kcOther + 1; kc < numKeyCodes; kc++ {
		c := keyNames[kc][0]
		t[c] = append(t[c], kc)
	}
	return t
}()

// nextKeyCode is nextKey returning the key's code (kcOther for any key we do
// not read), positioned at the value: a known key, with or without white
// space around it, or the object's end; anything else goes to slowKeyCode.
// parseMsg reads the wire's shape, `,"key":`, before calling it.
func (d *Decoder) nextKeyCode(first bool) (keyCode, bool, error) {
	b := d.frame
	i := d.s.Offset()
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i < len(b) && b[i] == '}' {
		d.s.SetOffset(i + 1) // the object's end, as NextKey consumes it
		return kcOther, false, nil
	}
	if !first {
		if i >= len(b) || b[i] != ',' {
			return d.slowKeyCode(first)
		}
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	kc, n := keyColonAt(b, i)
	if kc == kcOther {
		return d.slowKeyCode(first)
	}
	d.s.SetOffset(i + n)
	return kc, true, nil
}

// keyColonAt matches the known key, quotes and colon included, at b[i:] and
// returns its code and length (kcOther, 0 for none). keyColon16 matches the
// first 16 bytes, zero-padded past the end of b (no key has a zero byte);
// the few keys longer than that have their last bytes compared here.
func keyColonAt(b []byte, i int) (keyCode, int) {
	var kc keyCode
	var n int
	if i >= 0 && len(b)-i >= 16 {
		kc, n = keyColon16((*[16]byte)(b[i : i+16]))
	} else {
		var pad [16]byte
		if i >= 0 && i < len(b) {
			copy(pad[:], b[i:])
		}
		kc, n = keyColon16(&pad)
	}
	if n > 16 && string(win(b, i+16, n-16)) != keyTails[kc] {
		return kcOther, 0 // rare: min_order_size, last_trade_price, transaction_hash
	}
	return kc, n
}

// keyTails holds what follows the first 16 bytes of `"key":`.
var keyTails = func() (t [numKeyCodes]string) {
	for kc, name := range keyNames {
		if q := `"` + name + `":`; len(q) > 16 {
			t[kc] = q[16:]
		}
	}
	return t
}()

// keyColon16 is keyColonAt on 16 bytes; for a key longer than that it
// reports the key whose first 16 bytes these are. The dispatch on the first
// letter then comparisons with constants of a fixed array compile to a jump
// and a few wide loads per key, without bounds checks. TestKeyColonAt keeps
// it in step with keyNames.
func keyColon16(k *[16]byte) (keyCode, int) {
	if k[0] != '"' {
		return kcOther, 0
	}
	switch k[1] {
	case 'a':
		switch {
		case string(k[:len(`"asset_id":`)]) == `"asset_id":`:
			return kcAssetID, len(`"asset_id":`)
		case string(k[:len(`"asks":`)]) == `"asks":`:
			return kcAsks, len(`"asks":`)
		}
	case 'b':
		switch {
		case string(k[:len(`"best_bid":`)]) == `"best_bid":`:
			return kcBestBid, len(`"best_bid":`)
		case string(k[:len(`"best_ask":`)]) == `"best_ask":`:
			return kcBestAsk, len(`"best_ask":`)
		case string(k[:len(`"bids":`)]) == `"bids":`:
			return kcBids, len(`"bids":`)
		}
	case 'c':
		if string(k[:len(`"changes":`)]) == `"changes":` {
			return kcChanges, len(`"changes":`)
		}
	case 'e':
		if string(k[:len(`"event_type":`)]) == `"event_type":` {
			return kcEventType, len(`"event_type":`)
		}
	case 'h':
		if string(k[:len(`"hash":`)]) == `"hash":` {
			return kcHash, len(`"hash":`)
		}
	case 'l':
		if string(k[:]) == `"last_trade_pric` {
			return kcLastTrade, len(`"last_trade_price":`)
		}
	case 'm':
		switch {
		case string(k[:len(`"market":`)]) == `"market":`:
			return kcMarket, len(`"market":`)
		case string(k[:]) == `"min_order_size"`:
			return kcMinOrder, len(`"min_order_size":`)
		}
	case 'n':
		switch {
		case string(k[:len(`"neg_risk":`)]) == `"neg_risk":`:
			return kcNegRisk, len(`"neg_risk":`)
		case string(k[:len(`"new_tick_size":`)]) == `"new_tick_size":`:
			return kcNewTick, len(`"new_tick_size":`)
		}
	case 'p':
		switch {
		case string(k[:len(`"price":`)]) == `"price":`:
			return kcPrice, len(`"price":`)
		case string(k[:len(`"price_changes":`)]) == `"price_changes":`:
			return kcPriceChanges, len(`"price_changes":`)
		}
	case 's':
		switch {
		case string(k[:len(`"size":`)]) == `"size":`:
			return kcSize, len(`"size":`)
		case string(k[:len(`"side":`)]) == `"side":`:
			return kcSide, len(`"side":`)
		}
	case 't':
		switch {
		case string(k[:len(`"timestamp":`)]) == `"timestamp":`:
			return kcTimestamp, len(`"timestamp":`)
		case string(k[:len(`"tick_size":`)]) == `"tick_size":`:
			return kcTickSize, len(`"tick_size":`)
		case string(k[:]) == `"transaction_has`:
			return kcTxHash, len(`"transaction_hash":`)
		}
	}
	return kcOther, 0
}

// slowKeyCode reads any other key (or the closing brace) with nextKey.
func (d *Decoder) slowKeyCode(first bool) (keyCode, bool, error) {
	key, ok, err := d.nextKey(first)
	if !ok || err != nil || len(key) == 0 {
		return kcOther, ok, err
	}
	for _, kc := range keysByFirst[key[0]] {
		if string(key) == keyNames[kc] {
			return kc, true, nil
		}
	}
	return kcOther, true, nil
}
