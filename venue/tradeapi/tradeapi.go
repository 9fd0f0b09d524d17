// Package tradeapi is the contract between a venue's trading API and the simulated
// exchange that answers it: a driver that implements [TradingServer] speaks
// its venue's trading wire (REST paths, WebSocket requests, user channels)
// over an [Exchange] the caller owns (package replayer/serve/trading runs
// the backtester's). It sits beside package venue, not in it, because only
// the trading emulator and the venues that offer one use it.
package tradeapi

import (
	"context"
	"net/http"

	"github.com/tapedeck/tapedeck/book"
)

// TradingServer is implemented by a driver whose venue's trading API
// tapedeck can serve (replay serve --trading): the venue's REST paths and
// WebSocket requests, answered from a simulated exchange the caller owns
// (package replayer/serve/trading runs the backtester's). The venue's
// package knows the wire; the Exchange knows the matching.
type TradingServer interface {
	// TradingAPI returns a new API for one server: its Handler and
	// sessions share state (API keys, order ids), which lives as long as
	// the caller holds the API — two servers never share any.
	TradingAPI() TradingAPI
}

// TradingAPI is a venue's trading surface as its own servers speak it.
type TradingAPI interface {
	// Handler serves the venue's REST API — market data (book snapshots,
	// mids, instrument listings) and trading (orders, cancels, account
	// state) — with the venue's paths, JSON shapes, status codes and error
	// texts, from ex. It is mounted at the server's root.
	Handler(ex Exchange, opt TradingOptions) http.Handler
	// NewSession returns the trading side of one WebSocket connection (the
	// venue's user channels, order requests over the socket). push sends a
	// text frame to the client; it is safe for concurrent use and never
	// blocks (a client that does not read is disconnected).
	NewSession(ex Exchange, opt TradingOptions, push func(frame []byte)) TradingSession
}

// TradingOptions are the choices of a trading API server.
type TradingOptions struct {
	// AnySignature accepts any well-formed signature: every request trades
	// for the one account DefaultAccount (default "0x" and 40 zeros), and
	// every account query reads it. Otherwise an account is what the
	// signature proves (Hyperliquid: the signer recovered from the
	// action's EIP-712 signature).
	AnySignature   bool
	DefaultAccount string
	// Testnet: the signatures are the venue's testnet ones (Hyperliquid's
	// phantom agent source "b").
	Testnet bool
}

// TradingSession is the trading side of one WebSocket connection. Handle is
// called by the connection's reader only; Close once, when the connection
// ends.
type TradingSession interface {
	// Handle answers a client frame that belongs to the trading API
	// (handled true, with the answers to send in order), or leaves it to
	// the market-data session (handled false).
	Handle(msg []byte) (answers [][]byte, handled bool)
	Close()
}

// Exchange is a simulated venue a TradingAPI answers from. Every method is
// safe for concurrent use. Values are fixed-point at the driver's Scale;
// money (cash, fees, values) at 10 decimals.
type Exchange interface {
	// NowNs is the replay clock: the receive time of the last recorded
	// event the simulator processed (ns since the epoch), 0 before the
	// first.
	NowNs() int64
	// Account returns the account of that id (an address, an API key),
	// opening it with the starting cash on first use. ok false: the
	// account limit is reached.
	Account(id string) (acct Account, ok bool)
	// Lookup returns an account only if it exists.
	Lookup(id string) (Account, bool)
	// Book appends the instrument's levels, best first, at most depth a
	// side (−1 all), to bids and asks; ok false when no valid book is
	// known. exNs is the exchange time of its last event.
	Book(instrument string, depth int, bids, asks []book.Level) (b, a []book.Level, exNs int64, ok bool)
	// Instruments lists what the simulator knows of each instrument seen.
	Instruments() []SimInstrument
	// Recorded returns the REST bodies recorded so far (discovery
	// listings, meta), latest last, borrowed read-only.
	Recorded() [][]byte
	// Start asks the replay to start (it starts on a client's first
	// subscription otherwise).
	Start()
}

// SimInstrument is the simulator's knowledge of one instrument.
type SimInstrument struct {
	ID, Market string
	Tick       int64 // price tick (0: a significant-figures rule)
	MinSize    int64
	SzDecimals int // −1 unknown
	Mid        int64
	Position   int64 // not per account: 0 here
	Resolved   bool
	// TakerFeeRate is the taker rate the simulator prices a fill at now
	// (backtest.Context.TakerFeeRate: a configured rate, else what the
	// recording has stated so far), a fraction; FeeKnown false when it
	// cannot tell.
	TakerFeeRate float64
	FeeKnown     bool
}

// Account is one trader of an Exchange.
type Account interface {
	ID() string
	// Place submits orders (in order) and waits until the exchange has
	// processed each one (accepted and rested, filled, or refused) or ctx
	// ends. Results are in the order of reqs.
	Place(ctx context.Context, reqs []SimOrderRequest) []SimOrder
	// Cancel cancels orders and waits until the exchange has processed
	// each (or ctx ends); the result per id is "" when it was cancelled,
	// else why not (no such order, already done, filled meanwhile).
	Cancel(ctx context.Context, ids []uint64) []string
	// Modify replaces an open order's price and size (it loses its queue
	// position unless only the size shrinks) and waits until the exchange
	// has processed it, returning the order after it; why is "" unless it
	// could not be sent (no such order, already done).
	Modify(ctx context.Context, id uint64, price, size int64) (o SimOrder, why string)
	// Orders appends the account's orders (open only when open is true),
	// oldest first.
	Orders(dst []SimOrder, open bool) []SimOrder
	// Order returns one order by id or client id ("" none).
	Order(id uint64, clientID string) (SimOrder, bool)
	// Fills appends the account's fills, oldest first.
	Fills(dst []SimFill) []SimFill
	// State returns cash, positions and what is held by resting orders.
	State() SimState
	// Watch calls f with every order change and fill of the account from
	// now on, on the simulator's goroutine (f must not block or call back
	// into the Exchange); stop ends it.
	Watch(f func(SimUpdate)) (stop func())
	// SetLeverage records the leverage of an instrument (margin display).
	SetLeverage(instrument string, lev int, cross bool)
	Leverage(instrument string) (lev int, cross bool)
}

// SimOrderRequest is an order as a venue API received it.
type SimOrderRequest struct {
	Instrument string
	Buy        bool
	Price      int64
	Size       int64
	Amount     int64  // dollars of a market BUY sized in money (price scale)
	TIF        string // the venue's words: GTC, GTD, FOK, FAK, IOC, ALO
	PostOnly   bool
	ReduceOnly bool
	ExpireNs   int64
	ClientID   string // the client's own id (Hyperliquid cloid)
	Tag        string
}

// SimOrder is an order's state.
type SimOrder struct {
	ID       uint64
	ClientID string
	SimOrderRequest
	Status   string // "pending", "open", "filled", "cancelled", "expired", "rejected"
	Reason   string // the venue's words when rejected
	Filled   int64
	AvgPrice int64 // of the fills so far, 0 none
	SubmitNs int64 // replay clock at submission
	DoneNs   int64
}

// SimFill is one execution of an account's order.
type SimFill struct {
	Seq        uint64
	OrderID    uint64
	Instrument string
	Buy        bool
	Price      int64
	Size       int64
	Maker      bool
	Fee        int64 // money; negative is a rebate
	ExchangeNs int64
	RecvNs     int64
	Position   int64 // the instrument's position before the fill
	// ClosedPnl is the profit the fill realized on the position it reduced
	// (money, fees not included): the closed size × (fill price − average
	// entry price), negated for a short; 0 for a fill that opens or adds.
	ClosedPnl int64
}

// SimState is an account's money and positions.
type SimState struct {
	Cash      int64 // money
	Equity    int64 // cash + positions at their marks
	Positions []SimPosition
}

// SimPosition is one instrument's holding.
type SimPosition struct {
	Instrument string
	Size       int64 // negative is short
	EntryPx    int64 // average entry price
	Mark       int64
	Value      int64 // money: size × mark
	Upnl       int64 // money
	// LiqPx is the mark at which the simulator liquidates the account
	// (backtest.Context.LiquidationPrice); 0 none (not cross-margined, or
	// no positive price reaches the maintenance margin).
	LiqPx int64
}

// SimUpdate is one change an account's watchers see: an order (Fill nil)
// or a fill with its order.
type SimUpdate struct {
	Order SimOrder
	Fill  *SimFill
}
