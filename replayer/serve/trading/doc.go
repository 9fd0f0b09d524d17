// Package trading is the simulated exchange behind replay serve --trading:
// one shared replay of the recording drives the backtester (package
// backtest) with one Engine per account, and the venue's own trading API
// (tradeapi.TradingAPI, from the venue's driver) answers bots from it. The
// orders a bot sends are handed to its account's engine by a bridge
// strategy at the next recorded event the engine processes, through the
// very Context a Go strategy submits with, so an order schedule sent
// through the API gives the fills `replay backtest` gives a Go strategy
// submitting the same orders at the same events.
//
// The Hub owns the replay, the accounts and the clients the market data is
// forwarded to. Its lock is held by the replay goroutine while a record is
// applied to the books and the engines, and released while the replay
// waits (paced) or waits for the bots (deterministic mode), so that API
// requests always read a consistent book and account state.
//
// A live hub (NewLive) has no replay of its own: a running capture's live
// engine feeds it (Live, for recorder.Recorder.Subscribe), and a bot
// paper-trades the live books (capture run --trading). It applies each
// event under its lock to copies of the live books it owns, so the API
// never reads a book the live engine is writing.
package trading
