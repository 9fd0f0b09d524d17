package hyperliquid

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/venue/internal/jscan"
)

// Sentinels wrapped by DecodeError. Decimal failures come as *book.DecimalError
// (wrapping book.ErrSyntax, ErrPrecision, ErrRange or ErrNegative), JSON syntax
// and type errors as a syntax error carrying the offset.
var (
	// ErrEmptyFrame means the frame held nothing but white space.
	ErrEmptyFrame = errors.New("hyperliquid: empty frame")
	// ErrNotObject means the frame is JSON but not an object: an array, a
	// string, a number, true, false or null.
	ErrNotObject = errors.New("hyperliquid: frame is not a JSON object")
	// ErrMissingField means a field the channel requires is absent.
	ErrMissingField = errors.New("hyperliquid: missing field")
	// ErrDuplicateField means an envelope carried "channel" or "data" twice.
	ErrDuplicateField = errors.New("hyperliquid: duplicate field")
	// ErrUnsorted means snapshot levels were not strictly best-first (bids
	// descending, asks ascending).
	ErrUnsorted = errors.New("hyperliquid: snapshot levels not strictly best-first")
	// ErrLevelSides means "levels" did not hold exactly two sides.
	ErrLevelSides = errors.New("hyperliquid: levels must hold exactly [bids, asks]")
	// ErrNonPositive means a price or size was zero where the venue never sends it.
	ErrNonPositive = errors.New("hyperliquid: price or size not positive")
	// ErrSide means a trade side was neither "A" nor "B".
	ErrSide = errors.New("hyperliquid: trade side not \"A\" or \"B\"")
	// ErrRange means an integer (time, order count) is out of range.
	ErrRange = errors.New("hyperliquid: integer out of range")
	// ErrTooManyLevels means a snapshot side exceeded WithMaxLevels.
	ErrTooManyLevels = errors.New("hyperliquid: too many levels")
	// ErrTooManyTrades means a trades frame exceeded WithMaxTrades.
	ErrTooManyTrades = errors.New("hyperliquid: too many trades in one frame")
	// ErrTooManyInstruments means a frame would exceed WithMaxInstruments.
	ErrTooManyInstruments = errors.New("hyperliquid: too many instruments")
	// ErrTrailingData means bytes other than white space follow the JSON value.
	ErrTrailingData = errors.New("hyperliquid: data after the JSON value")
	// ErrCrossed means an l2Book snapshot whose best bid is at or above its
	// best ask: the venue's snapshots are consistent books, so it is not one.
	ErrCrossed = errors.New("hyperliquid: crossed l2Book snapshot")
)

// DecodeError is a frame the decoder rejected; the books are exactly as before.
type DecodeError struct {
	Channel string // the frame's channel, or "" if it was not read yet
	Field   string // path of the offending field, e.g. "levels[0][3].px"; "" for the frame
	Offset  int    // byte offset in the frame where the problem was found
	Err     error  // a sentinel above, a *book.DecimalError, or a JSON syntax error
}

// Error returns the message: what failed and where.
func (e *DecodeError) Error() string {
	ch := "frame"
	if e.Channel != "" {
		ch = e.Channel + " frame"
	}
	var se *jscan.SyntaxError
	if errors.As(e.Err, &se) {
		// The syntax error already names the offset.
		if e.Field == "" {
			return fmt.Sprintf("hyperliquid: decode %s: %v", ch, e.Err)
		}
		return fmt.Sprintf("hyperliquid: decode %s: %s: %v", ch, e.Field, e.Err)
	}
	if e.Field == "" {
		return fmt.Sprintf("hyperliquid: decode %s at offset %d: %v", ch, e.Offset, e.Err)
	}
	return fmt.Sprintf("hyperliquid: decode %s: %s at offset %d: %v", ch, e.Field, e.Offset, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() error { return e.Err }
