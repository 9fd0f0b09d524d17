// Package backtest runs a trading strategy against replayed (or live)
// market data with a simulated exchange per venue: the strategy sees
// exactly the events and books `replay run` produces (same decoders, same
// books, hash-checked), and trades through a Context.
//
// # Strategy API
//
// A Strategy receives every event (feed.Event, with the read-only book)
// and, through the Context, submits, cancels and amends orders, reads its
// open orders, fills, positions, cash and the simulated clock, and sets
// timers. Optional interfaces add callbacks: Starter, OrderHandler (every
// order state change), FillHandler, TimerHandler, Finisher. Run replays
// datasets through a new Engine; an Engine is a feed.Subscriber, so the same
// strategy value runs in paper mode on a live capture:
//
//	e := backtest.NewEngine(strategy, cfg)
//	rec.Subscribe(feed.Key{}, e) // recorder.Recorder: live books, same simulator
//	… rec.Run(ctx, w) …
//	res := e.Finish()            // after Run returns
//
// A strategy that panics is isolated (StrategyError names the event); the
// simulated exchange goes on, its resting orders still fill.
//
// # Venue rules
//
// The simulator names no venue: each driver describes its rules as data in
// venue.Capabilities.Trading (order types, post-only as a flag or as ALO,
// outcome tokens, GTD threshold, tick, minimum size and value, significant
// figures, funding, fees, rejection texts, readers for resolutions,
// funding and trade fee rates), carried by the events (feed.Event.Driver); what recorded
// REST bodies say of instruments (tick and minimum sizes, szDecimals, fees)
// is read by the driver's Instruments, the same reader the exports'
// instruments table uses.
//
//   - Polymarket: GTC, GTD (expiration more than one minute ahead; the
//     order leaves the book one minute before it, exactly, on the exchange
//     clock: docs.polymarket.com "Place orders", "GTD orders expire one
//     minute before their stated expiration as a security threshold"),
//     FOK and FAK (a BUY sized
//     in dollars, Amount; a SELL in shares), post-only on GTC/GTD (rejected
//     if marketable); tick size 0.01 until a book summary or a
//     tick_size_change says otherwise, minimum size 5 or the summary's
//     (resting orders); sizes in whole hundredths of a share at every tick
//     size, a market BUY's dollars in cents, and a marketable BUY
//     (dollar-sized, or a limit BUY that crosses) worth $1 at least,
//     refused in the venue's words
//     ("invalid amounts, the buy orders maker amount supports a max
//     accuracy of 4 decimals, taker amount a max of 2 decimals", "invalid
//     amount for a marketable BUY order ($0.75), min size: $1";
//     py-clob-client's ROUNDING_CONFIG, sources in venue/polymarket's
//     Trading); every fill of an order sized in shares is whole lots of
//     0.01, the rest of the order resting, the rest of a level finer than a
//     lot left to others (the venue's matches against market orders can
//     leave finer remainders: a conservative model); a dollar-sized BUY
//     spends its whole amount, its shares at the size scale (6 decimals),
//     as the venue's do; a
//     SELL needs the tokens (Config.AllowShort lifts it). The two tokens of
//     a market are one mirrored book: a BUY YES at p meets resting SELL YES
//     and BUY NO at 1 − p (the larger of the two sizes at a price, never
//     their sum: the venue publishes the same orders in both books). A
//     recorded market_resolved (or Config.Resolutions at the end) settles
//     positions at 1 or 0 and cancels resting orders; later orders are
//     rejected.
//   - Hyperliquid: GTC, IOC, ALO, reduce-only (cut to the position; refused
//     if it would increase it); prices of at most 5 significant figures and
//     6 − szDecimals decimals (integers always valid), sizes of szDecimals
//     decimals (from a recorded meta body), $10 minimum value; funding paid
//     at every hour of the exchange clock on the position held then,
//     position × oracle price × the funding rate in force (the latest asset
//     context received at or before the hour; hyperliquid.gitbook.io
//     "Funding": position size × oracle price × funding rate).
//
// A rejection carries the venue's reason with the values that broke the
// rule. The strategy's orders are not in the recorded book, so a taker order
// never matches the strategy's own resting orders. An order for an
// instrument with no data, after resolution, or on a book that is invalid
// (before its first snapshot, after a gap) is rejected, naming the order.
//
// # Models
//
// Queue position (Config.Queue, ParseQueueModel), on L2 data: a resting
// order starts behind the level's size at its arrival; trades printed at its
// price consume the queue ahead first and then fill it, never more than
// each trade's size beyond the queue, in whole lots; a trade through its
// price, or the opposite best moving through it, fills it all. These are
// hftbacktest's PartialFillExchange rules (src/backtest/proc/
// partialfillexchange.rs: exec_qty = min(filled, trade qty, leaves) at the
// price; the whole leaves qty when the trade or the best goes through),
// with one addition: hftbacktest caps each order alone, so one print can
// fill two orders of the strategy's at its price twice over; here they
// share it in arrival order, on either token of a mirrored pair (a SELL NO
// at 1 − p waits in the queue of a BUY YES at p), never more than its size
// in all.
// The queue ahead is the model's estimate (Context.QueueEstimate,
// Fill.Queue): venues do not report it.
//
//   - risk-averse (RiskAverse, the default): front ← front − traded;
//     a decrease of the level only caps front at the level's new size.
//   - power:N and log (Prob, hftbacktest's ProbQueueModel): a decrease not
//     explained by trades, chg, is split between the size ahead (front) and
//     behind (back = level − front) with p = f(back) / (f(back) + f(front)):
//     front ← min(front − (1 − p)·chg + min(back − p·chg, 0), level), f(x) =
//     x^N or ln(1 + x), x in shares. Source: nkaz001/hftbacktest,
//     src/backtest/models/queue.rs.
//
// Taker orders walk the levels visible at their arrival; the size they take
// is gone for later strategy orders until the venue next updates the level.
//
// Latency (Config.Latency): ConstantLatency or SampledLatency from a CSV of
// measured round trips (ReadLatencyCSV: entry = ack = cancel = half of each
// round trip, in order).
//
// # Clocks and order of processing
//
// Three clocks, as in hftbacktest (exch_ts, local_ts):
//
//	exchange time   ──A──────T──B──────────────M────────▶  the venue's stamps
//	                   ╲      ▲   ╲            │ ack latency
//	receive time        ╲     │    ╲           ▼
//	                     ▼    │     ▼
//	strategy time   ─────a──s─┼─────b──────────R────────▶  receive times
//	                        │ │
//	                        └─┘ entry latency: the order sent at s
//	                            reaches the venue at T = s + entry
//
// Events arrive in receive order (a, b: feed latency = receive − exchange
// time, as recorded). The strategy acts at receive times (s). Each venue's
// exchange clock is the latest exchange timestamp its feed has shown;
// messages without one (Hyperliquid activeAssetCtx and allMids, pongs,
// control records) never move it. An action (order, cancel, amend) sent at
// s reaches the venue at T = s + entry latency and is applied when the
// first event of that venue stamped after T arrives (B), before B touches
// anything, against the venue's book as it stood after every event stamped
// at or before T (A): events stamped exactly T come first, hftbacktest's
// rule (its EventSet puts exchange data before an order received at the
// same timestamp: src/backtest/evs.rs). The engine keeps that book itself
// for every instrument of a venue it can trade, from the instrument's first
// event, applying each event as it is delivered, because the decoder's book
// is the book after the whole frame (a copy started at the strategy's first
// order would hold the rest of that frame: a frame can carry messages
// stamped apart, and an order can become due between them).
// GTD expiries and funding boundaries are on the same exchange clock: an
// expiry at E applies before any event stamped E or later, whichever
// instrument it is for. What the exchange does at time M (an ack, a fill,
// a rejection, a refused cancel, funding, a settlement) reaches the
// strategy at R = M + ack latency, on its clock: everything the Context
// tells of the account is that local view, changed only by reports
// received (hftbacktest's local orders and state, which its
// LocalProcessor changes only as exchange responses arrive: src/backtest/
// proc/local.rs): Order, OpenOrders, Working, Position, Cash, Fills,
// Instrument's Position, Funding and LastTrade, LiquidationPrice
// (computed from those), and the own takes Available and Take subtract
// from the book. Context.ViewVersion changes whenever a report changes
// that view (and at each order, cancel, amend or timer the strategy
// sends), so a strategy can tell an event that brought it nothing new.
// What the feed delivers (books, mark, funding rate, resolution) is public
// and seen at its receive time. Queue position is not reported by venues: Context.QueueEstimate gives the queue model's
// estimate, as such, for an order the strategy has been told is open. With
// Config.IgnoreExchangeTime every event's receive time serves as its
// exchange time. An event stamped before its venue's clock (another
// connection's, late) is applied where it arrives.
//
// A cancel or amend that reaches the venue before its order (a cancel
// latency shorter than the entry latency), or after it is done, is
// refused with the venue's unknown-order error (TradingReasons.UnknownOrder:
// Polymarket's not_canceled, Hyperliquid's "Order was never placed, already
// canceled, or filled."), reported through OnOrder with that reason; the
// order itself then arrives and rests as sent, and is reported open.
//
// Fees: Polymarket taker fee = shares × rate × p × (1 − p)
// (docs.polymarket.com "Fees", trading/fees: fee = C × feeRate × p ×
// (1 − p), taker rates by category, makers never charged), makers pay
// nothing and receive MakerRebateShare of the taker fee their fill made
// (with Config.RecordedRebates, --maker-rebate recorded: the market's
// recorded Gamma feeSchedule.rebateRate, from when it is received, a
// per-fill approximation of the venue's daily pro-rata rebates).
// A market's rate is, in this order: Config.FeeRates by token id, then by
// condition id (--fee); Config.FeeCategories by the market's recorded fee
// category (Gamma's feeType, --fee-category); what the recording states,
// from the moment it is received and never before (no look-ahead): the
// market's recorded Gamma listing (feesEnabled false is fee free, else
// feeSchedule.rate, a fraction; a schedule with an exponent other than 1
// is not the model's curve and is not used), else the fee_rate_bps of its
// recorded trades (basis points: 700 is 0.07; the rate the match
// applied; 1000 and above is the base fee an order signs, which captures
// of early 2026 show on markets whose documented rate is 0.07 or 0.03
// alike: it says fees are on, not the rate, and is not used); else
// Config.FeeRate (--fee-rate). The CLOB's maker_base_fee and
// taker_base_fee are not read: they are the base fee an order signs (1000
// bps on fee-charging markets whatever their category), not the formula's
// rate. Checked against docs.polymarket.com/trading/fees (the formula,
// the category table of taker rates 0.07 crypto … 0 geopolitics, makers
// never charged, fees set per market at match time, not in the order). A window (Run with replayer.WithWindow, --from) keeps what REST
// bodies recorded before it state (replayer.WithWarmupREST hands them to
// the engine during the warmup): a listing recorded at discovery holds for
// a window that starts hours later. Summary.FeeRates lists, per market,
// each rate its fills used, its source and since when (Context.TakerFeeRate
// tells a strategy the rate now); recorded values that do not read (a
// negative or non-numeric rate, "NaN") change nothing and are problems in
// Result.Errors. A recording captured by token ids holds no Gamma listing
// (discovery fetches one only for slugs, condition ids and --all-markets):
// its markets' rates come from their trades. Hyperliquid: notional × rate, maker and taker by tier
// (Config.FeeTier; hyperliquid.gitbook.io "Fees"), exact fixed-point at
// CashDecimals, rounded half away from zero. Polymarket fees are floored
// to 0.00001 USDC, the smallest the venue charges (as NautilusTrader's
// Polymarket compute_commission: "floored to 5 decimal places, matching the
// venue charge").
//
// # Outputs
//
// Result holds every order, fill (liquidity, queue ahead at the fill, fee),
// the equity curve (cash plus positions at their marks, sampled every
// Config.EquityEveryNs, default one second, and at the end: one sample per
// time, the latest state), the positions
// at those samples and the markouts (the mid 1 s, 10 s and 60 s after each
// fill, signed as a gain: the instrument's mid at its first event stamped
// at or after the fill's exchange time plus the horizon whose book has both
// sides and is not crossed). Summary has PnL (in all and by instrument), fees,
// rebates, funding, turnover, the fill ratio in dollars (a dollar-sized
// order counts at its amount) and each venue's orders, fills and units,
// max drawdown, Sharpe and Sortino of the equity's changes over
// Config.ReturnPeriodNs (default one minute; each change divided by the
// starting cash, annualized by √(365 days / period); Sortino's deviation
// is of the negative returns), peak margin, liquidations, refused cancels,
// the mean markouts and a digest (XXH64 of every order's final state,
// every fill and the cash): the same data, strategy and parameters give
// the same digest and byte-identical files. The drawdown, ratios,
// markouts, counts and values are folded into the summary as the run goes
// (the ratios from exact sums of the fixed-point equity changes), so a
// summary-only run (ManyOptions.SummaryOnly: no series kept, orders and
// fills let go once done and reported, what sweeps without tables use)
// has the very same summary and digest while what it holds does not grow
// with the recording's length.
//
// # Many runs over one replay
//
// RunMany drives one engine per Spec from a single decode: each sees the
// events, books and clocks a Run of its spec alone sees, so its fills and
// digest are that Run's. What of an event depends on the recording alone
// (the exchange-side books every engine keeps, the event's instrument, the
// fee rate a trade states) is worked out once for all the engines, not
// once per engine. ManyOptions.Workers steps the engines on several
// goroutines that all finish an event before the next (the books move
// with it); results do not depend on it. On a 2-core host it does not
// pay reliably: the workers compete for the cores with the replay's own
// goroutines (DefaultWorkers, which replay backtest uses, keeps 1 there).
//
// # Balances and margin
//
// Config.Cash is the starting collateral. Polymarket is fully
// collateralized: a BUY needs price × size (a dollar-sized BUY its amount)
// plus its taker fee at the limit in cash beyond what resting BUYs hold,
// else INVALID_ORDER_NOT_ENOUGH_BALANCE; a SELL needs the tokens beyond
// what resting SELLs hold (no naked shorts; Config.AllowShort lifts it).
// The complement is another token: holding NO does not let one sell YES;
// to be short YES is to buy NO, which the mirrored book makes the same
// order as a SELL YES at 1 − p, and each token's position is marked and
// settled on its own. Hyperliquid is cross margin, a model of the venue's
// ("Margining", hyperliquid.gitbook.io), with each asset's max leverage L
// from the recorded meta (1 when none was recorded):
//
//	initial     = Σ |position| × mark / L + Σ resting size × price / L
//	maintenance = MaintenanceShare × Σ |position| × mark / L   (½: half
//	              the initial margin at max leverage, as the venue states)
//	equity      = cash + Σ position × mark
//
// An order that increases a position by q at price p needs q × p / L of
// equity − initial free, else "Insufficient margin to place order." with
// the figures. When equity < maintenance (checked at each event of an
// instrument held and after funding) the account is liquidated, as a
// model: every resting order of the venue cancelled and every position
// closed at its mark by a taker order tagged "liquidation", paying the
// taker fee (the venue's liquidators sell through the book and its
// backstop vault keeps the remaining margin; neither is simulated). The
// mark is the recorded mark price, else the last uncrossed mid, else the
// last fill. Summary.PeakMargin is the largest initial margin seen.
//
// WriteTables writes five tables into a directory, NAME.csv, NAME.parquet or
// NAME.arrow by format, through replayer/export's typed tables: the very
// Parquet, Arrow IPC and CSV writers, options (export.WithCompression,
// WithBatchRows, WithDatasets) and conventions of `replay export`'s tables.
// Types: int64, string, bool; times timestamp[ns] in UTC (CSV: integer ns
// since the epoch, 0 for null; DuckDB reads them as TIMESTAMP_NS), null where there
// is none; prices and sizes exact
// decimal128(38, s) with s the finest price or size scale of the run's
// instruments (Polymarket 4/6, Hyperliquid 8/8: a run over both venues
// rescales the coarser exactly), money (cash, fees, values) decimal128(38,
// CashDecimals) (CSV: the exact decimal text). The Parquet and Arrow
// metadata hold tapedeck.table (backtest_NAME), tapedeck.datasets and the
// run's digest, strategy and parameters (MetaDigest, MetaStrategy,
// MetaParams).
//
//   - orders: order_id, venue, instrument, side (buy, sell), tif (GTC, GTD,
//     FOK, FAK, IOC, ALO), post_only, reduce_only, price, size, amount
//     (price scale: the dollars of a Polymarket FOK/FAK BUY; null
//     otherwise), filled, status (pending, open, filled, cancelled,
//     expired, rejected), reason (the venue's words; "" if none),
//     submit_ns, active_ns (first event the order met at the exchange),
//     done_ns, expire_ns (GTD), tag.
//   - fills: fill_seq (1, 2, …), order_id, venue, instrument, side, price,
//     size, liquidity (maker, taker), queue_ahead (the size ahead of a maker
//     fill in its queue; null for a taker fill), fee (money; negative is a
//     rebate), exchange_ts_ns (the filling event's venue time; null if it
//     had none), local_ts_ns (its receive time), tag.
//   - positions: local_ts_ns, venue, instrument, position (negative is
//     short), mark (the mid; when the book is crossed or a side is empty,
//     the last mid it had with both sides uncrossed, else the last fill's
//     price; the settlement once resolved), value (position × mark, money): one row per sample
//     and instrument with a position or resting orders.
//   - equity: local_ts_ns, cash, equity (cash + the positions' values): one
//     row per sample.
//   - markouts: fill_seq, venue, instrument, horizon_ns, mid (the mid a
//     horizon after the fill, as above), pnl_per_unit ((mid − price) for a buy,
//     (price − mid) for a sell).
//
// # Built-in strategies
//
// Builtins: noop (the engine's overhead), mm (a post-only quoting market
// maker with inventory skew; it skips a book event whose inputs equal those
// of its last evaluation that did nothing) and complement (Polymarket: buys both tokens
// with FOKs when ask(YES) + ask(NO) + fees < 1 − edge, the fees at the
// rates the simulator will charge, Context.TakerFeeRate, unless fee_rate is
// given). `replay backtest`
// runs them; Example shows a user strategy.
package backtest
