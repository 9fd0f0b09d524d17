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
// not read), positioned at the value.
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
	kc, n := quotedKeyAt(b, i)
	if kc == kcOther {
		return d.slowKeyCode(first)
	}
	j := i + n
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	if j >= len(b) || b[j] != ':' {
		return d.slowKeyCode(first)
	}
	d.s.SetOffset(j + 1)
	return kc, true, nil
}

// quotedKeyAt matches the known key, quotes included, at b[i:] and returns
// its code and length (kcOther, 0 for none). The dispatch on the first letter
// then comparisons with constants compile to a jump and a few wide loads per
// key, where a loop over keyNames called the runtime for each candidate.
// TestQuotedKeyAt keeps it in step with keyNames.
func quotedKeyAt(b []byte, i int) (keyCode, int) {
	if i+1 >= len(b) || b[i] != '"' {
		return kcOther, 0
	}
	switch b[i+1] {
	case 'a':
		switch {
		case string(win(b, i, len(`"asset_id"`))) == `"asset_id"`:
			return kcAssetID, len(`"asset_id"`)
		case string(win(b, i, len(`"asks"`))) == `"asks"`:
			return kcAsks, len(`"asks"`)
		}
	case 'b':
		switch {
		case string(win(b, i, len(`"best_bid"`))) == `"best_bid"`:
			return kcBestBid, len(`"best_bid"`)
		case string(win(b, i, len(`"best_ask"`))) == `"best_ask"`:
			return kcBestAsk, len(`"best_ask"`)
		case string(win(b, i, len(`"bids"`))) == `"bids"`:
			return kcBids, len(`"bids"`)
		}
	case 'c':
		if string(win(b, i, len(`"changes"`))) == `"changes"` {
			return kcChanges, len(`"changes"`)
		}
	case 'e':
		if string(win(b, i, len(`"event_type"`))) == `"event_type"` {
			return kcEventType, len(`"event_type"`)
		}
	case 'h':
		if string(win(b, i, len(`"hash"`))) == `"hash"` {
			return kcHash, len(`"hash"`)
		}
	case 'l':
		if string(win(b, i, len(`"last_trade_price"`))) == `"last_trade_price"` {
			return kcLastTrade, len(`"last_trade_price"`)
		}
	case 'm':
		switch {
		case string(win(b, i, len(`"market"`))) == `"market"`:
			return kcMarket, len(`"market"`)
		case string(win(b, i, len(`"min_order_size"`))) == `"min_order_size"`:
			return kcMinOrder, len(`"min_order_size"`)
		}
	case 'n':
		switch {
		case string(win(b, i, len(`"neg_risk"`))) == `"neg_risk"`:
			return kcNegRisk, len(`"neg_risk"`)
		case string(win(b, i, len(`"new_tick_size"`))) == `"new_tick_size"`:
			return kcNewTick, len(`"new_tick_size"`)
		}
	case 'p':
		switch {
		case string(win(b, i, len(`"price"`))) == `"price"`:
			return kcPrice, len(`"price"`)
		case string(win(b, i, len(`"price_changes"`))) == `"price_changes"`:
			return kcPriceChanges, len(`"price_changes"`)
		}
	case 's':
		switch {
		case string(win(b, i, len(`"size"`))) == `"size"`:
			return kcSize, len(`"size"`)
		case string(win(b, i, len(`"side"`))) == `"side"`:
			return kcSide, len(`"side"`)
		}
	case 't':
		switch {
		case string(win(b, i, len(`"timestamp"`))) == `"timestamp"`:
			return kcTimestamp, len(`"timestamp"`)
		case string(win(b, i, len(`"tick_size"`))) == `"tick_size"`:
			return kcTickSize, len(`"tick_size"`)
		case string(win(b, i, len(`"transaction_hash"`))) == `"transaction_hash"`:
			return kcTxHash, len(`"transaction_hash"`)
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
