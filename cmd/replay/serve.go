package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/units"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/replayer/serve/trading"
	"github.com/tapedeck/tapedeck/venue/tradeapi"
)

// serveCmdOptions are the parsed flags of `replay serve`.
type serveCmdOptions struct {
	Paths      []string
	Listen     string
	Speed      replayer.Speed
	Queue      int
	Window     time.Duration
	CloseAtEnd bool
	MaxGap     time.Duration
	MaxSubs    int
	MaxBytes   int64

	// Trading mode (--trading): the hub's and the API's options (the hub's
	// speed and max gap are the replay's).
	Trading   bool
	Hub       trading.Options
	API       tradeapi.TradingOptions
	ExitAtEnd bool
	Out       string
	OutFormat columnar.Format
	OutOpts   columnar.Options

	ErrOut io.Writer
	StdOut io.Writer
	// Ready, if set, is called on a goroutine of its own with the listening
	// address as the server starts accepting (tests use it with --listen
	// 127.0.0.1:0).
	Ready func(addr net.Addr)
}

func newServeCmd(runF func(context.Context, *serveCmdOptions) error) *cobra.Command {
	opts := &serveCmdOptions{}
	var speed string
	var sim simFlags
	tf := pflag.NewFlagSet("trading", pflag.ContinueOnError)
	cmd := &cobra.Command{
		Use:   "serve DATASET...",
		Short: "Serve recordings over WebSocket in the venue's own protocol",
		Long: `Serve one or more recordings of one venue as a WebSocket server that speaks
that venue's protocol, so a client written for the live venue connects to it
unchanged: it sends its usual subscribe frames and receives the recorded
frames byte-identical, paced at --speed, only for what it subscribed to.

Hyperliquid clients get subscriptionResponse acks, "Already subscribed" errors
and {"channel":"pong"}; Polymarket clients get PONG for PING (the initial book
dump is part of the recording). Hyperliquid frames are selected by channel and
coin; a Polymarket frame naming any subscribed asset is sent whole.

Every connection replays the recording from its start on its own clock,
beginning --subscribe-window after its first subscribe so that the subscribe
frames a client sends on connecting all count from the first frame. A client
that falls behind a paced replay by more than --queue messages is disconnected
with close code 1008 and a reason; at --speed max each replay goes as fast as
its client reads. A paced replay skips the recorded time around a loss
(disconnect, gap, stall) at once and cuts any other silence to --max-gap of
recorded time. A client holding more than --max-subscriptions subscriptions,
or sending more than --max-client-bytes of frames, is closed with 1008 and a
reason.

Serve on a loopback address: there is no authentication. Ctrl-C stops the
server and prints what it served.

--trading adds the venue's own trading API on the same address, answered by
the simulated exchange of "replay backtest" (the same fills, queue, latency
and fee models and rules), so a bot written against the venue's SDK trades the
recording unchanged. Hyperliquid: POST /info (l2Book, allMids, meta,
metaAndAssetCtxs, openOrders, frontendOpenOrders, orderStatus, userFills,
clearinghouseState) and POST /exchange (order GTC/IOC/ALO with reduce-only
and cloid, cancel, cancelByCloid, modify, batchModify, updateLeverage), the
WebSocket post method and the userFills, orderUpdates and userEvents
subscriptions. An account is the signer address recovered from the action's
EIP-712 signature (--any-signature: every request trades one account), each
starting with --cash. Polymarket (what @polymarket/clob-client calls): GET
/book and POST /books (with the venue's hash), /tick-size, /neg-risk,
/fee-rate, /time, /midpoint, API keys by L1 signature (POST /auth/api-key, GET
/auth/derive-api-key; an account is the key), and with L2 headers POST /order
and /orders (the signed order checked; GTC, GTD, FOK, FAK, post-only), DELETE
/order, /orders, /cancel-all, /cancel-market-orders, GET /data/orders,
/data/order/ID, /data/trades, /balance-allowance; the user channel (ws/user)
sends order and trade events. Nothing is sent anywhere: the server answers everything
itself.

With --trading there is one replay, shared by every connection: it starts a
--subscribe-window after the first subscription and each client gets the
recorded frames from the point it has reached. An order sent through the API
is handed to the account's simulator at the next recorded event it processes
(the replay clock, plus --entry-latency), and the request is answered once
the simulator has accepted, filled or refused it.

--deterministic replays as fast as the bots go but never ahead of them:
after a recorded frame is sent to a client, the next record reaches the
simulators only once the bots are done with it, so an order sent in reaction
to a frame is submitted at the first event of the next record, the same on
every run. "Done" is decided by events, not time, for a bot that says so on
its WebSocket: it sends the text message "tapedeck:lockstep" before it
subscribes, then "tapedeck:ack" once per recorded message it has handled,
after the requests it sent in reaction have been answered (the examples do
this with LOCKSTEP=1; the venue never sees these messages). The replay then
goes on when no API request is in progress and every such client has
acknowledged every frame it was sent, or is waiting for an order, cancel or
modify the simulator processes at the next record (send a reaction's orders
in one batch or one after another, not on concurrent requests; with several
bots, one waiting for an order lets the replay past the others). A bot that
does not acknowledge gets a quiet window instead: the replay goes on once the
client's socket has taken the frame and no request has come or been in
progress for --settle of wall time — the same fills on every run only if the
bot always reacts within --settle, which a loaded host can break. Orders,
cancels and modifies that came while the replay ran are counted at the end.
--out DIR writes the orders, fills,
positions, equity and markouts tables of "replay backtest" at the end (a
directory per account when there are several), and the summaries are printed;
--exit-at-end stops the server when the recording ends.`,
		Example: `  # Serve the Hyperliquid sample at wire speed; point a client at ws://127.0.0.1:8765/ws
  $ replay serve datasets/samples/hyperliquid --listen 127.0.0.1:8765

  # Ten times faster, each connection closed at the end of the recording
  $ replay serve datasets/samples/hyperliquid --listen 127.0.0.1:8765 --speed 10x --close-at-end

  # The Polymarket sample as fast as the client reads (ws://127.0.0.1:8766/ws/market)
  $ replay serve datasets/samples/polymarket --listen 127.0.0.1:8766 --speed max

  # Trade the Hyperliquid sample with an unchanged SDK bot (HttpTransport apiUrl
  # http://127.0.0.1:8765, WebSocketTransport url ws://127.0.0.1:8765/ws),
  # deterministic, the tables written when the recording ends
  $ replay serve datasets/samples/hyperliquid --trading --deterministic --exit-at-end --out fills/`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.ErrOut = cmd.ErrOrStderr()
			opts.StdOut = cmd.OutOrStdout()
			var err error
			if opts.Speed, err = replayer.ParseSpeed(speed); err != nil {
				return cli.FlagErrorf("--speed: %v", err)
			}
			if err := cli.CheckHostPort(opts.Listen); err != nil {
				return cli.FlagErrorf("--listen %q: %v", opts.Listen, err)
			}
			if opts.Queue < 1 {
				return cli.FlagErrorf("--queue %d: want at least 1", opts.Queue)
			}
			if opts.Window < 0 {
				return cli.FlagErrorf("--subscribe-window %v: want 0 or more", opts.Window)
			}
			if opts.MaxGap < 0 {
				return cli.FlagErrorf("--max-gap %v: want 0 or more", opts.MaxGap)
			}
			if opts.MaxSubs < 1 || opts.MaxBytes < 1 {
				return cli.FlagErrorf("--max-subscriptions and --max-client-bytes: want at least 1")
			}
			tf.VisitAll(func(fl *pflag.Flag) {
				if err == nil && fl.Changed && !opts.Trading {
					err = cli.FlagErrorf("--%s applies to --trading only", fl.Name)
				}
			})
			if err != nil {
				return err
			}
			if opts.Trading {
				if opts.Hub.Settle <= 0 || opts.Hub.MaxAccounts < 1 {
					return cli.FlagErrorf("--settle and --accounts: want more than 0")
				}
				if opts.Hub.Backtest, err = sim.config("--queue-model", nil); err != nil {
					return err
				}
				if opts.OutFormat, opts.OutOpts, err = backtestOutput(sim.Format, "", 0); err != nil {
					return err
				}
				if opts.Hub.Deterministic {
					if cmd.Flags().Changed("speed") && opts.Speed != replayer.SpeedMax {
						return cli.FlagErrorf("--deterministic paces the replay by the bots: leave --speed out")
					}
					opts.Speed = replayer.SpeedMax
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runServe(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:8765", "`HOST:PORT` to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&speed, "speed", "1x", "pacing: 1x (wire speed), 0.01x to 100000x, or max (as fast as each client reads)")
	cmd.Flags().DurationVar(&opts.MaxGap, "max-gap", replayer.DefaultMaxGap, "paced replays: the longest recorded silence a client waits out (0: all of it)")
	cmd.Flags().IntVar(&opts.MaxSubs, "max-subscriptions", serve.DefaultMaxSubscriptions, "subscriptions one client may hold before it is closed (1008)")
	cmd.Flags().Int64Var(&opts.MaxBytes, "max-client-bytes", serve.DefaultMaxClientBytes, "bytes of frames one client may send before it is closed (1008)")
	cmd.Flags().IntVar(&opts.Queue, "queue", serve.DefaultSendQueue, "messages a client may fall behind by before it is disconnected as slow")
	cmd.Flags().DurationVar(&opts.Window, "subscribe-window", serve.DefaultSubscribeWindow, "delay from a client's first subscribe to the start of its replay")
	cmd.Flags().BoolVar(&opts.CloseAtEnd, "close-at-end", false, "close each connection (code 1000) once its replay has sent the last frame")
	cmd.Flags().BoolVar(&opts.Trading, "trading", false, "also serve the venue's trading API, answered by the backtest simulator (see above)")
	// The flags of --trading, which refuses them without it (in this order).
	tf.SortFlags = false
	tf.BoolVar(&opts.Hub.Deterministic, "deterministic", false, "--trading: replay as fast as the bots react, never ahead of them (same bot, same fills)")
	tf.DurationVar(&opts.Hub.Settle, "settle", trading.DefaultSettle, "--deterministic: quiet time a bot that does not acknowledge frames (tapedeck:ack) gets to react to each")
	tf.BoolVar(&opts.API.AnySignature, "any-signature", false, "--trading: accept any signature; every request trades one account")
	tf.IntVar(&opts.Hub.MaxAccounts, "accounts", trading.DefaultMaxAccounts, "--trading: most accounts (signers) the simulated exchange opens")
	tf.BoolVar(&opts.ExitAtEnd, "exit-at-end", false, "--trading: stop the server when the recording ends")
	tf.StringVar(&opts.Out, "out", "", "--trading: write each account's orders, fills, positions, equity and markouts into `DIR` at the end")
	tf.StringVar(&sim.Format, "format", "csv", "--out tables: csv, parquet or arrow")
	tf.Float64Var(&sim.Cash, "cash", 1000, "--trading: starting cash of each account in dollars")
	tf.StringVar(&sim.Queue, "queue-model", "risk-averse", "--trading: queue position model (replay backtest --queue): risk-averse, power:N, log")
	tf.DurationVar(&sim.Entry, "entry-latency", 0, "--trading: order entry latency (replay clock)")
	tf.DurationVar(&sim.Ack, "ack-latency", 0, "--trading: acknowledgement latency")
	tf.DurationVar(&sim.CancelLat, "cancel-latency", 0, "--trading: cancel latency")
	tf.Float64Var(&sim.FeeRate, "fee-rate", 0, "--trading: default Polymarket taker fee rate where the recording states none")
	tf.IntVar(&sim.FeeTier, "fee-tier", 0, "--trading: tier of tiered fee schedules (Hyperliquid perps VIP 0..6)")
	tf.BoolVar(&sim.AllowShort, "allow-short", false, "--trading: allow Polymarket SELLs beyond the shares held")
	cmd.Flags().AddFlagSet(tf)
	return cmd
}

func runServe(ctx context.Context, opts *serveCmdOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sopts := []serve.Option{serve.WithSpeed(opts.Speed), serve.WithSendQueue(opts.Queue),
		serve.WithSubscribeWindow(opts.Window), serve.WithMaxGap(opts.MaxGap), serve.WithClientLimits(opts.MaxSubs, opts.MaxBytes)}
	if opts.CloseAtEnd {
		sopts = append(sopts, serve.WithCloseAtEnd())
	}
	if opts.ExitAtEnd {
		sopts = append(sopts, serve.WithExitAtEnd())
	}
	if opts.Trading {
		hub := opts.Hub
		hub.Speed, hub.MaxGap = opts.Speed, opts.MaxGap
		sopts = append(sopts, serve.WithTrading(hub, opts.API))
	}
	s, err := serve.New(opts.Paths, sopts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(opts.ErrOut, "serving %s recording at ws://%s%s (speed %s); Ctrl-C to stop\n",
		s.Venue(), ln.Addr(), s.Path(), opts.Speed)
	if opts.Ready != nil {
		go opts.Ready(ln.Addr())
	}
	err = s.Serve(ctx, ln)
	st := s.Stats()
	fmt.Fprintf(opts.ErrOut, "served %d connections: %d frames (%s); %d slow clients disconnected; %d over a client limit; %d replays stopped by read errors\n",
		st.Connections, st.FramesSent, units.DecimalBytes(st.BytesSent), st.SlowDisconnects, st.OverLimit, st.ReadErrors)
	if k := st.Skipped; k != (replayer.Skipped{}) {
		fmt.Fprintf(opts.ErrOut, "not waited out: %s\n", k.String())
	}
	if err == nil && opts.Trading {
		err = serveResults(opts, s)
	}
	return err
}

// serveResults prints each account's summary and writes its tables.
func serveResults(opts *serveCmdOptions, s *serve.Server) error {
	if n := s.Hub().Late(); n > 0 {
		fmt.Fprintf(opts.ErrOut, "deterministic: %d orders, cancels or modifies came while the replay ran (a bot that broke the lockstep rule, or slower than --settle %v): this run may not repeat\n", n, opts.Hub.Settle)
	}
	if opts.StdOut == nil {
		opts.StdOut = io.Discard
	}
	n, err := s.Hub().WriteResults(opts.StdOut, opts.Out, opts.OutFormat, sourced(opts.OutOpts, opts.Paths))
	if n == 0 && err == nil {
		fmt.Fprintln(opts.ErrOut, "no account traded")
	}
	return err
}
