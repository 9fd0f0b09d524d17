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
	if !first {
		if i >= len(b) || b[i] != ',' {
			return d.slowKeyCode(first)
		}
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	if i+1 >= len(b) || b[i] != '"' {
		return d.slowKeyCode(first)
	}
	for _, kc := range keysByFirst[b[i+1]] {
		k := keyNames[kc]
		e := i + 1 + len(k)
		if e < len(b) && b[e] == '"' && string(b[i+1:e]) == k {
			j := e + 1
			for j < len(b) && isSpace(b[j]) {
				j++
			}
			if j >= len(b) || b[j] != ':' {
				break
			}
			d.s.SetOffset(j + 1)
			return kc, true, nil
		}
	}
	return d.slowKeyCode(first)
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
