package hyperliquid

import "github.com/tapedeck/tapedeck/venue/internal/jscan"

// Route is what a subscription matches a received frame on: its channel and
// the fields a subscription names. Every slice aliases the frame and is nil
// when absent.
type Route struct {
	Channel  []byte // "l2Book", "trades", "allMids", …
	Coin     []byte // data.coin; data[0].coin for trades; data.s for candle
	Interval []byte // data.i of a candle
	Dex      []byte // data.dex of a builder-dex allMids
}

// RouteFrame reads the route of a frame without decoding it: the serve mode
// of the replayer uses it to pick the recorded frames a client subscribed to.
// It reads only as far as the route needs — on the wire's key order, up to
// the coin of a book, bbo, trades or context frame, past which it does not
// validate — and returns a *DecodeError for a frame that is not a JSON
// envelope (non-JSON text included) or is malformed where it looked. It does
// not allocate except on error, and is safe for concurrent use.
func RouteFrame(frame []byte) (Route, error) {
	var r Route
	var sc jscan.Scanner
	sc.Reset(frame)
	fail := func(err error) (Route, error) {
		return Route{}, &DecodeError{Channel: string(r.Channel), Offset: sc.Offset(), Err: err}
	}
	if err := sc.BeginObject(); err != nil {
		return fail(err)
	}
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		switch string(key) {
		case "channel":
			if r.Channel, err = sc.String(); err != nil {
				return fail(err)
			}
		case "data":
			if err := routeData(&sc, &r); err != nil {
				return fail(err)
			}
			if r.complete() {
				return r, nil
			}
		default:
			if _, err := sc.Skip(); err != nil {
				return fail(err)
			}
		}
	}
	if !sc.AtEnd() {
		return fail(ErrTrailingData)
	}
	if r.Channel == nil {
		return fail(ErrMissingField)
	}
	return r, nil
}

// complete reports whether the route is fully known, so the rest of the
// frame need not be read: data frames name their coin once, near the start.
func (r *Route) complete() bool {
	switch string(r.Channel) {
	case "l2Book", "bbo", "trades", "activeAssetCtx", "activeSpotAssetCtx":
		return r.Coin != nil
	case "candle":
		return r.Coin != nil && r.Interval != nil
	}
	return false
}

// routeData picks the routing fields out of a data value: an object, or an
// array whose first object names the coin (trades).
func routeData(sc *jscan.Scanner, r *Route) error {
	switch sc.Peek() {
	case '{':
		return routeObject(sc, r)
	case '[':
		_ = sc.BeginArray()
		for first := true; ; first = false {
			ok, err := sc.NextElem(first)
			if err != nil || !ok {
				return err
			}
			if first && sc.Peek() == '{' {
				if err := routeObject(sc, r); err != nil || r.complete() {
					return err
				}
				continue
			}
			if _, err := sc.Skip(); err != nil {
				return err
			}
		}
	}
	_, err := sc.Skip()
	return err
}

func routeObject(sc *jscan.Scanner, r *Route) error {
	_ = sc.BeginObject()
	for first := true; ; first = false {
		key, ok, err := sc.NextKey(first)
		if err != nil || !ok {
			return err
		}
		var dst *[]byte
		switch string(key) {
		case "coin", "s":
			dst = &r.Coin
		case "i":
			dst = &r.Interval
		case "dex":
			dst = &r.Dex
		}
		if dst != nil && sc.Peek() == '"' {
			if *dst, err = sc.String(); err != nil || r.complete() {
				return err
			}
			continue
		}
		if _, err := sc.Skip(); err != nil {
			return err
		}
	}
}
