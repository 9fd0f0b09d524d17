package polymarket

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/book"
)

// Errors a Decode call wraps in a *DecodeError. Book-level problems wrap the
// book package's sentinels (book.ErrPrecision, book.ErrRange, book.ErrSyntax,
// book.ErrNegative for decimals; book.ErrDuplicatePrice, book.ErrBadLevel for
// snapshot levels), so errors.Is works across both.
var (
	// ErrSyntax means the frame is not well-formed JSON.
	ErrSyntax = errors.New("polymarket: malformed JSON")
	// ErrFrame means the frame is neither a JSON object, an array of objects,
	// nor a text control frame such as PONG.
	ErrFrame = errors.New("polymarket: frame is not a JSON object or array of objects")
	// ErrType means a field holds the wrong JSON type (an object where a
	// string belongs, an array element that is not an object).
	ErrType = errors.New("polymarket: wrong JSON type")
	// ErrMissingField means a field the event needs is absent.
	ErrMissingField = errors.New("polymarket: missing field")
	// ErrSide means a side is neither "BUY" nor "SELL" (the venue's spelling:
	// "buy" is rejected too).
	ErrSide = errors.New("polymarket: side is not BUY or SELL")
	// ErrDomain means a well-formed value the venue never sends: a price
	// outside (0, 1], a size above maxShares, a tick size that is not one of
	// the venue's four (see NOTES.md).
	ErrDomain = errors.New("polymarket: value outside the venue's domain")
	// ErrTimestamp means a timestamp is not a non-negative integer of at most
	// 18 digits.
	ErrTimestamp = errors.New("polymarket: timestamp is not a non-negative integer")
	// ErrLegacyChanges means a price_change in the schema used before
	// 2025-09-15 23:00 UTC ({asset_id, changes:[{price,side,size}], hash}).
	ErrLegacyChanges = errors.New(`polymarket: legacy price_change schema (pre-2025-09-15 "changes" array)`)
	// ErrLegacyFlat means a price_change in the oldest schema, with price,
	// side and size at the top level of the message.
	ErrLegacyFlat = errors.New("polymarket: legacy price_change schema (pre-2025 flat price/side/size)")
	// ErrTooManyInstruments means a frame would take the decoder past
	// maxInstruments distinct asset ids.
	ErrTooManyInstruments = errors.New("polymarket: too many instruments")
)

// maxInstruments bounds the distinct asset ids one Decoder tracks, so a hostile
// or corrupt stream cannot grow its memory without limit. One connection
// carries at most about 500 assets (PROTOCOLS.md §1.10).
const maxInstruments = 1 << 16

// DecodeError reports a message (or a whole frame) Decode rejected. The
// levels of every book are as they were; a book the message would have
// changed is invalid until its next snapshot (see Decoder.Decode).
type DecodeError struct {
	Offset int    // byte offset in the frame where the problem was found
	Event  string // event_type of the offending message, "" if not known
	Asset  string // asset id of the offending message or price_changes entry, "" if not known
	Field  string // path of the offending field, e.g. "bids[3].price"; "" if none
	Err    error  // one of the ErrXxx sentinels or a wrapped book sentinel
}

// Error returns the message: what failed and where.
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("polymarket: ")
	if e.Event != "" {
		b.WriteString(e.Event)
		b.WriteString(": ")
	}
	if e.Asset != "" {
		b.WriteString("asset ")
		b.WriteString(e.Asset)
		b.WriteString(": ")
	}
	msg := strings.TrimPrefix(e.Err.Error(), "polymarket: ")
	var dec *book.DecimalError
	if errors.As(e.Err, &dec) {
		// The path in Field names the value better than the decimal's own field.
		msg = fmt.Sprintf("%q: %v", dec.Text, dec.Err)
	}
	if e.Field != "" && !strings.HasPrefix(msg, e.Field) {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	fmt.Fprintf(&b, " at offset %d", e.Offset)
	return b.String()
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() error { return e.Err }
