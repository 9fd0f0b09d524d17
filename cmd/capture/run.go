package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/internal/statusweb"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/replayer/serve"
)

// runOptions are the parsed flags of `capture run`.
type runOptions struct {
	sessionFlags
	Out           string
	Rotate        time.Duration
	RotateSize    int64
	FlushInterval time.Duration
	StallTimeout  time.Duration
	InstStall     cli.OptionalDuration
	MetricsAddr   string
	ListenPublic  bool
	LogFormat     string
	Queue         int
	Live          bool
	Heal          bool
	Upload        uploadFlags
	Trading       string
	TradingCash   float64

	Stdout, Stderr io.Writer
	// ready, if set, is called with the metrics listener's address once
	// recording has started (tests); tradingReady with the --trading
	// listener's.
	ready        func(metricsAddr string)
	tradingReady func(addr string)
	// segmentDone, if set, is called (on a writer goroutine; it must not
	// block) after the uploader has been told a segment is finished, and
	// writerOpts are appended to the dataset writer's options (tests: a
	// segment size below --rotate-size's minimum, so that one finishes
	// after a few frames whatever the host's speed).
	segmentDone func(num uint32)
	writerOpts  []datasets.WriterOption
}

func newRunCmd(runF func(*runOptions) error) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --venue VENUE (--instruments IDS | --instruments-file FILE | --all-markets) --out DATASET",
		Short: "Record a venue's market data into a new dataset until interrupted",
		Long: `Record WebSocket market data into a new dataset, frame bytes unchanged, each
stamped with its wall-clock and monotonic receive time, until SIGINT or
SIGTERM (then: close the connections, flush, write a clean-close record, seal,
exit 0).

Connections are sharded (Polymarket: at most 100 ids per subscribe frame,
--assets-per-conn per connection; Hyperliquid: one subscription per frame,
paced within 2000 messages a minute, a default and a fast l2Book of one coin
on different sockets), kept alive (PING every 10 s; ping every 30 s) and
replaced with exponential backoff and jitter when they drop or go silent
(--stall-timeout without data, even if pongs still arrive). Every connect,
subscribe acknowledgement, disconnect (code, reason, suspect subscription),
reconnect, stall, queue overflow and write failure is a record of the dataset;
nothing is lost silently. Discovery responses (market lists, Hyperliquid meta
with szDecimals) are stored too, so a replay needs no network.

Polymarket WebSocket books lack min_order_size and neg_risk, two of the
fields their hash covers. So before every connect and reconnect of a
connection, its tokens' REST book summaries are fetched (POST /books on
--clob-endpoint, 100 tokens a request) and stored on that connection, ahead
of the WebSocket snapshots; a replay learns the fields from them and checks
every book hash. A failed or slow request (--rest-books=false turns them off)
is logged, counted in tapedeck_capture_rest_book_errors_total and recorded
as a note; the connection goes ahead without it.

With --metrics-addr, one read-only HTTP listener serves a status page at /
(each connection's state, uptime, reconnects, frame rate over the last hour,
last frame; each instrument's live top of book, last update, stalls, gaps and
hash mismatches; disk use, free space and time to full; the latest control
records), the same figures as JSON at /status.json (what "capture status
--addr" reads), and Prometheus metrics at /metrics. The page is embedded and
loads nothing from the network. The listener binds 127.0.0.1 when the host is
empty; a host that is not loopback needs --listen-public and is logged as a
warning. Logs are structured (--log-format text or json) on standard error.

--trading HOST:PORT paper-trades the live market: the venue's own trading API
and market-data WebSocket (what "replay serve --trading" serves: Hyperliquid
POST /info, /exchange, the WebSocket post method and user subscriptions;
Polymarket's CLOB REST API and user channel) on that address, so a bot written
against the venue's SDK trades unchanged against the books being recorded,
with replay backtest's simulator: its queue model, fees, margin and rules,
each account (signer, API key) starting with --trading-cash dollars. Nothing
is sent to the venue: every order, cancel and query is answered on this
machine. The WebSocket sends a client the live frames its subscriptions
select, as recorded. An order reaches the simulated exchange at the first
event received after it on this machine's clock (the venue's timestamps are
another clock). The address binds 127.0.0.1 when the host is empty; one that
is not loopback needs --listen-public. At the end each account's orders,
fills and cash are logged. Needs --live (the default).`,
		Example: `  # Two Polymarket tokens
  $ capture run --venue polymarket --instruments 72936048731589292555781174533757608024096898681344338816447372274344589246891,101155325224907042624192777106604175185803921887395325080529159889944296783944 --out pm-day

  # Hyperliquid fast books and top of book, with metrics
  $ capture run --venue hyperliquid --instruments BTC,ETH --channels l2Book+fast,bbo,trades --metrics-addr 127.0.0.1:9464 --out hl-day
  # then open http://127.0.0.1:9464/ or run: capture status --addr 127.0.0.1:9464

  # Paper-trade Hyperliquid BTC with an unchanged SDK bot (HttpTransport apiUrl
  # http://127.0.0.1:8765, WebSocketTransport url ws://127.0.0.1:8765/ws)
  $ capture run --venue hyperliquid --instruments BTC --channels l2Book,trades --trading 127.0.0.1:8765 --out hl-paper

  # Every active Polymarket market, hourly segments, from a config file
  $ capture run --config capture.json --all-markets --rotate 1h --out pm-all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Stdout, o.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := o.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCapture(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	o.sessionFlags.add(fs)
	fs.StringVar(&o.Out, "out", "", "`DATASET` directory to create (required; never overwritten)")
	fs.DurationVar(&o.Rotate, "rotate", datasets.DefaultSegmentDuration, "start a new segment file after this much time (at least 1m)")
	fs.Int64Var(&o.RotateSize, "rotate-size", datasets.DefaultSegmentSize, "start a new segment file after this many bytes (at least 1 MiB)")
	fs.DurationVar(&o.FlushInterval, "flush-interval", recorder.DefaultFlushInterval, "seal and write buffered records at least this often (a kill loses at most this much)")
	fs.DurationVar(&o.StallTimeout, "stall-timeout", recorder.DefaultStallTimeout, "replace a connection that carried no data for this long")
	fs.Var(&o.InstStall, "instrument-stall-timeout", "replace a connection when one steady instrument (Hyperliquid l2Book) carried nothing for this long; 0 off (default: --stall-timeout on hyperliquid, off on polymarket)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve the status page (/), /status.json and Prometheus /metrics on `HOST:PORT` (an empty host is 127.0.0.1)")
	fs.BoolVar(&o.ListenPublic, "listen-public", false, "allow a --metrics-addr or --trading address that is not loopback (logged as a warning)")
	fs.StringVar(&o.Trading, "trading", "", "paper trading: serve the venue's trading API and market-data WebSocket on `HOST:PORT` (an empty host is 127.0.0.1), answered by replay backtest's simulator against the live books")
	fs.Float64Var(&o.TradingCash, "trading-cash", 1000, "--trading: starting cash of each account in dollars")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format on standard error: text or json")
	fs.IntVar(&o.Queue, "queue", recorder.DefaultQueueFrames, "frames buffered between the sockets and the disk before dropping (each drop is recorded)")
	fs.BoolVar(&o.Live, "live", true, "decode the recording while writing it, with the decoders and books replay uses, off the write path (live books, integrity records, healing)")
	o.Upload.add(fs)
	fs.BoolVar(&o.Heal, "heal", true, "resubscribe an instrument whose live book fails a check (hash, top of book, crossed, stall) to get a fresh snapshot, with per-instrument backoff")
	return cmd
}

// The least values capture run accepts.
const (
	minRotate        = time.Minute
	minRotateSize    = 1 << 20
	minFlushInterval = 10 * time.Millisecond
	minStallTimeout  = 100 * time.Millisecond
)

func (o *runOptions) validate(cmd *cobra.Command) error {
	if err := o.sessionFlags.load(cmd); err != nil {
		return err
	}
	if o.Out == "" {
		return cli.FlagErrorf("--out DATASET is required")
	}
	if _, err := os.Stat(o.Out); err == nil {
		return cli.FlagErrorf("--out %s already exists; a recording never overwrites (choose a new directory)", o.Out)
	}
	// Minima that keep a typo from turning into a file or syscall storm
	// (--rotate 1ns made tens of thousands of segments a second).
	for _, d := range []struct {
		flag     string
		v, least time.Duration
	}{{"--rotate", o.Rotate, minRotate}, {"--flush-interval", o.FlushInterval, minFlushInterval}, {"--stall-timeout", o.StallTimeout, minStallTimeout}} {
		if d.v < d.least {
			return cli.FlagErrorf("%s %v is below the minimum %v", d.flag, d.v, d.least)
		}
	}
	if o.RotateSize < minRotateSize {
		return cli.FlagErrorf("--rotate-size %d is below the minimum %d (1 MiB)", o.RotateSize, minRotateSize)
	}
	if o.Queue < 1 {
		return cli.FlagErrorf("--queue must be positive, not %d", o.Queue)
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return cli.FlagErrorf("--log-format must be text or json, not %q", o.LogFormat)
	}
	if o.MetricsAddr != "" {
		if _, _, err := statusweb.CheckAddr(o.MetricsAddr, o.ListenPublic); err != nil {
			return cli.FlagErrorf("--metrics-addr %q: %v", o.MetricsAddr, err)
		}
	}
	if o.Trading != "" {
		if _, _, err := statusweb.CheckAddr(o.Trading, o.ListenPublic); err != nil {
			return cli.FlagErrorf("--trading %q: %v", o.Trading, err)
		}
		if !o.Live {
			return cli.FlagErrorf("--trading trades against the live books: it needs --live")
		}
		if !(o.TradingCash > 0) {
			return cli.FlagErrorf("--trading-cash must be positive")
		}
	}
	if o.ListenPublic && o.MetricsAddr == "" && o.Trading == "" {
		return cli.FlagErrorf("--listen-public needs --metrics-addr or --trading")
	}
	return o.Upload.validate()
}

func runCapture(ctx context.Context, o *runOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h slog.Handler = slog.NewTextHandler(o.Stderr, nil)
	if o.LogFormat == "json" {
		h = slog.NewJSONHandler(o.Stderr, nil)
	}
	log := slog.New(h)
	opts := []recorder.Option{recorder.WithLogger(log), recorder.WithFlushInterval(o.FlushInterval),
		recorder.WithStallTimeout(o.StallTimeout), recorder.WithQueue(o.Queue, recorder.DefaultQueueBytes),
		recorder.WithLive(o.Live), recorder.WithHeal(o.Heal)}
	if d, ok := o.InstStall.Get(); ok {
		opts = append(opts, recorder.WithInstrumentStallTimeout(d))
	}
	rec, err := recorder.New(o.spec(), opts...)
	if err != nil {
		return err
	}
	plan, err := rec.Prepare(ctx)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	up, err := o.Upload.start(ctx, o.Out, rec, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	wopts := []datasets.WriterOption{datasets.WithFlushInterval(o.FlushInterval),
		datasets.WithSegmentDuration(o.Rotate), datasets.WithSegmentSize(o.RotateSize)}
	if up != nil {
		done := up.SegmentDone
		if hook := o.segmentDone; hook != nil {
			done = func(num uint32) { up.SegmentDone(num); hook(num) }
		}
		wopts = append(wopts, datasets.WithSegmentDone(done))
	}
	wopts = append(wopts, o.writerOpts...)
	w, err := datasets.Create(o.Out, rec.Manifest(), wopts...)
	if err != nil {
		if !errors.Is(err, datasets.ErrExists) {
			os.RemoveAll(o.Out) // validate saw no --out: whatever is there now is this attempt's
		}
		return fmt.Errorf("run: %w", err)
	}
	// failed removes a dataset that holds nothing, so that a retry with the
	// same --out does not find it "already exists".
	failed := func(err error) error {
		w.Close()
		up.Abort()
		if w.Stats().Records == 0 {
			os.RemoveAll(o.Out)
		}
		return fmt.Errorf("run: %w", err)
	}
	metricsAddr := ""
	var srv *http.Server
	if o.MetricsAddr != "" {
		ln, err := statusweb.Listen(o.MetricsAddr, o.ListenPublic, log)
		if err != nil {
			return failed(fmt.Errorf("--metrics-addr: %w", err))
		}
		metricsAddr = ln.Addr().String()
		page := statusweb.New(statusweb.Config{Status: rec.LiveStatus, Dir: o.Out, Upload: o.Upload.status(up),
			Metrics: promhttp.HandlerFor(o.Upload.gatherer(rec.Gatherer(), up), promhttp.HandlerOpts{})})
		defer page.Close()
		// A client that never reads is cut off after the write timeout.
		srv = &http.Server{Handler: page, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: statusweb.WriteTimeout, IdleTimeout: time.Minute}
		go srv.Serve(ln)
		log.Info("status page", "url", "http://"+metricsAddr+"/", "metrics", "http://"+metricsAddr+"/metrics")
	}
	if o.Trading != "" {
		hostPort, loop, err := statusweb.CheckAddr(o.Trading, o.ListenPublic)
		if err != nil {
			return failed(fmt.Errorf("--trading: %w", err))
		}
		ln, err := net.Listen("tcp", hostPort)
		if err != nil {
			return failed(fmt.Errorf("--trading: %w", err))
		}
		if !loop {
			log.Warn("the trading API listens beyond loopback: anyone who reaches the address can trade its simulated accounts", "addr", ln.Addr().String())
		}
		paper, err := serve.StartPaper(ctx, serve.PaperOptions{Venue: o.Venue, Listener: ln,
			Cash: o.TradingCash, Logger: log, Subscribe: func(s feed.Subscriber) { rec.Subscribe(feed.Key{}, s) }})
		if err != nil {
			ln.Close()
			return failed(fmt.Errorf("--trading: %w", err))
		}
		defer paper.Close()
		if o.tradingReady != nil {
			o.tradingReady(paper.Addr())
		}
	}
	log.Info("recording", "out", o.Out, "connections", len(plan.Conns))
	if o.ready != nil {
		o.ready(metricsAddr)
	}
	runErr := rec.Run(ctx, w)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		srv.Shutdown(sctx)
		cancel()
	}
	closeErr := w.Close()
	if ls := rec.LiveStats(); ls.On {
		log.Info("live engine", "frames", ls.Frames, "decode_errors", ls.DecodeErrors, "skipped", ls.Skipped,
			"hash_mismatches", ls.HashMismatches, "top_mismatches", ls.TopMismatches, "crossed", ls.CrossedBooks,
			"resubscribes", ls.Resubscribes, "integrity_unrecorded", ls.IntegrityUnrecorded, "digest", ls.Digest)
	}
	st, ws := rec.Stats(), w.Stats()
	if runErr != nil && closeErr == nil && ws.Records == 0 {
		return failed(runErr)
	}
	// Not written: records the recorder gave up at shutdown and records the
	// dataset writer accepted but could not write at Close (both because the
	// disk stayed full; gap records in the dataset cover them when they fit).
	fmt.Fprintf(o.Stdout, "%s\t%d frames\t%d bytes\t%d records\t%d dropped\t%d not written\t%d reconnects\t%d stalls\n",
		o.Out, st.Frames, st.Bytes, ws.Records, st.Dropped, st.Lost+ws.Unwritten, st.Reconnects, st.Stalls)
	upErr := o.Upload.finish(up, o.Out, o.Stdout, log)
	if err := errors.Join(runErr, closeErr, upErr); err != nil {
		if n := st.Lost + ws.Unwritten; n > 0 {
			return fmt.Errorf("run: %d records not written (%d given up at shutdown, %d left in the writer at close): %w", n, st.Lost, ws.Unwritten, err)
		}
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
