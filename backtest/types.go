package backtest

import (
	"fmt"

	"github.com/tapedeck/tapedeck/book"
)

// Side of an order: Buy or Sell.
type Side uint8

// Order sides.
const (
	Buy Side = iota
	Sell
)

// String returns "buy" or "sell".
func (s Side) String() string {
	if s == Buy {
		return "buy"
	}
	return "sell"
}

// bookSide is the book side an order of side s rests on.
func (s Side) bookSide() book.Side {
	if s == Buy {
		return book.Bid
	}
	return book.Ask
}

// TIF is an order's time in force, in the venues' own vocabulary.
type TIF uint8

// Time-in-force values. GTC, GTD, FOK and FAK are Polymarket's order types;
// GTC, IOC and ALO Hyperliquid's.
const (
	GTC TIF = iota // good till cancelled: rests
	GTD            // good till date (Polymarket): rests until ExpireNs
	FOK            // fill or kill (Polymarket): all now or nothing
	FAK            // fill and kill (Polymarket): what fills now, the rest is cancelled
	IOC            // immediate or cancel (Hyperliquid): like FAK
	ALO            // add liquidity only (Hyperliquid): post-only, rejected if marketable
)

var tifNames = [...]string{"GTC", "GTD", "FOK", "FAK", "IOC", "ALO"}

// String returns the TIF's venue name.
func (t TIF) String() string {
	if int(t) < len(tifNames) {
		return tifNames[t]
	}
	return fmt.Sprintf("tif(%d)", uint8(t))
}

// ParseTIF is the inverse of TIF.String (case-sensitive upper case).
func ParseTIF(s string) (TIF, error) {
	for i, n := range tifNames {
		if n == s {
			return TIF(i), nil
		}
	}
	return 0, fmt.Errorf("backtest: unknown time in force %q", s)
}

func (t TIF) immediate() bool { return t == FOK || t == FAK || t == IOC }

// Status of an order.
type Status uint8

// Order statuses.
const (
	StatusPending   Status = iota // submitted, not yet at the exchange (entry latency)
	StatusOpen                    // resting
	StatusFilled                  // completely filled
	StatusCancelled               // cancelled by the strategy, killed (FAK/IOC rest) or settled away
	StatusExpired                 // GTD expiry
	StatusRejected                // refused by the venue's rules; Reason says why
)

var statusNames = [...]string{"pending", "open", "filled", "cancelled", "expired", "rejected"}

// String returns the status name used in outputs.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "invalid"
}

// Done reports whether the order can change no more.
func (s Status) Done() bool { return s >= StatusFilled }

// Liquidity says whether a fill added or took liquidity.
type Liquidity uint8

// Liquidity flags.
const (
	Maker Liquidity = iota
	Taker
)

// String returns "maker" or "taker".
func (l Liquidity) String() string {
	if l == Maker {
		return "maker"
	}
	return "taker"
}

// OrderRequest is what a strategy submits. Price and Size are fixed-point at
// the instrument's book Scale (Context.Scale, Context.Price and
// Context.Shares convert). A Polymarket FOK or FAK BUY is sized in dollars:
// set Amount (fixed-point at the price scale, e.g. 2.5 dollars = 25000 at 4
// decimals) and leave Size 0; every other order is sized in shares or coins.
type OrderRequest struct {
	Instrument string
	Side       Side
	Price      int64 // limit price; for FOK/FAK the worst price accepted
	Size       int64
	Amount     int64 // Polymarket FOK/FAK BUY: dollars to spend
	TIF        TIF
	PostOnly   bool  // Polymarket GTC/GTD post-only (Hyperliquid: use ALO)
	ReduceOnly bool  // Hyperliquid
	ExpireNs   int64 // GTD: expiry, ns since the epoch (exchange clock)
	Tag        string
}

// Order is the simulator's view of one order. Values are fixed-point at the
// instrument's Scale. Strategies read Orders; they never modify them.
type Order struct {
	ID         uint64
	Venue      string
	Instrument string
	Side       Side
	// refs counts the actions and reports about the order not yet applied
	// or delivered (bounded.go). It sits in Side's padding: every order is
	// kept twice for the whole run (the exchange's and the strategy's).
	refs       int32
	Price      int64
	Size       int64 // original size (shares); for a dollar-sized BUY, what Amount bought
	Amount     int64
	TIF        TIF
	PostOnly   bool
	ReduceOnly bool
	ExpireNs   int64
	Tag        string

	Status   Status
	Filled   int64
	Reason   string // rejection or cancellation reason, in the venue's words where it has them
	Queue    int64  // the queue model's estimate of the size ahead (resting orders; 0 in the strategy's view)
	SubmitNs int64  // local clock at submit
	ActiveNs int64  // exchange time the order reached the venue (the latest, after an amend)
	DoneNs   int64  // exchange time it was filled, cancelled, expired or rejected

	in         *Instrument // its instrument (nil: unknown when submitted); see Engine.instOf
	prevLevel  int64       // level size last seen at Price (queue model)
	tradedHere int64       // trade size at Price since the last level change (probabilistic model)
}

// Leaves returns the unfilled size.
func (o *Order) Leaves() int64 { return o.Size - o.Filled }

// Fill is one execution of a strategy order.
type Fill struct {
	Seq        uint64 // 1, 2, … in execution order
	OrderID    uint64
	Venue      string
	Instrument string
	Side       Side
	Price      int64
	Size       int64
	Liquidity  Liquidity
	reported   bool  // its report reached the strategy (summary-only runs: it may go, bounded.go); in Liquidity's padding
	Queue      int64 // the queue model's estimate of the size ahead when it filled (maker fills; no venue reports it)
	Fee        int64 // at the cash scale (CashScale); negative is a rebate
	ExchangeNs int64 // exchange time of the match (the venue's clock)
	RecvNs     int64 // local time the fill report reaches the strategy (ExchangeNs + ack latency)
	Tag        string

	cashDelta int64 // cash change at CashDecimals (notional and fee)
	filled    int64 // the order's filled size after this fill
}

// Error is a rejection or a strategy fault naming the order.
type Error struct {
	OrderID    uint64
	Instrument string
	Reason     string
}

func (e *Error) Error() string {
	if e.OrderID == 0 {
		return fmt.Sprintf("backtest: %s: %s", e.Instrument, e.Reason)
	}
	return fmt.Sprintf("backtest: order %d (%s): %s", e.OrderID, e.Instrument, e.Reason)
}
