package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/datasets"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/venue/polymarket"
)

func init() { verbs.Add(func() *cobra.Command { return newRunCmd(nil) }) }

// sessionFlags are what run and plan share: what to record and where from.
// A --config file provides defaults; flags given on the command line win.
type sessionFlags struct {
	Config          string   `json:"-"`
	Venue           string   `json:"venue"`
	Instruments     []string `json:"instruments"`
	InstrumentsFile string   `json:"instruments_file"`
	AllMarkets      bool     `json:"all_markets"`
	Channels        []string `json:"channels"`
	Endpoint        string   `json:"endpoint"`
	RESTEndpoint    string   `json:"rest_endpoint"`
	AssetsPerConn   int      `json:"assets_per_conn"`
	Conns           int      `json:"conns"`
	CLOBEndpoint    string   `json:"clob_endpoint"`
	RESTBooks       bool     `json:"-"` // from the config's raw keys: absent must not mean false
}

func (f *sessionFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Config, "config", "", "JSON `FILE` of settings (keys as the flags, with _ for -); flags override it")
	fs.StringVar(&f.Venue, "venue", "", "polymarket or hyperliquid (required)")
	fs.StringSliceVar(&f.Instruments, "instruments", nil, "`IDS`: Polymarket token ids, market slugs or condition ids; Hyperliquid coins (comma-separated)")
	fs.StringVar(&f.InstrumentsFile, "instruments-file", "", "`FILE` with one instrument per line (# comments)")
	fs.BoolVar(&f.AllMarkets, "all-markets", false, "record every listed market (Polymarket: active markets, following new and resolved ones; Hyperliquid: every meta and spotMeta coin)")
	fs.StringSliceVar(&f.Channels, "channels", nil, "Hyperliquid `CHANNELS`: l2Book, l2Book+fast, l2Book+nSigFigs=5+mantissa=2, bbo, trades, allMids, activeAssetCtx, candle+interval=1m (default l2Book,trades)")
	fs.StringVar(&f.Endpoint, "endpoint", "", "WebSocket `URL` (default: the venue's public endpoint)")
	fs.StringVar(&f.RESTEndpoint, "rest-endpoint", "", "discovery `URL`: Polymarket Gamma base, Hyperliquid info (default: the venue's)")
	fs.IntVar(&f.AssetsPerConn, "assets-per-conn", 0, "Polymarket assets per connection, 1..500 (default 200)")
	fs.IntVar(&f.Conns, "conns", 0, "Hyperliquid connections to spread subscriptions over, up to 10 (default: as few as possible)")
	fs.BoolVar(&f.RESTBooks, "rest-books", true, "Polymarket: before every (re)connect, store the connection's REST book summaries so a replay can check book hashes (ignored for hyperliquid)")
	fs.StringVar(&f.CLOBEndpoint, "clob-endpoint", "", "Polymarket CLOB REST base `URL` for the book summaries (default "+polymarket.CLOBEndpoint+")")
}

// configKeys are the keys a --config file may hold: the flags of run and
// plan, with _ for -.
var configKeys = []string{"venue", "instruments", "instruments_file", "all_markets", "channels", "endpoint",
	"rest_endpoint", "assets_per_conn", "conns", "clob_endpoint", "rest_books", "out", "rotate", "flush_interval", "stall_timeout", "metrics_addr"}

// load merges the config file under the flags and validates, naming flags.
// It returns the config file's raw keys for the verb's own settings.
func (f *sessionFlags) load(cmd *cobra.Command) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if f.Config != "" {
		b, err := os.ReadFile(f.Config)
		if err != nil {
			return nil, cli.FlagErrorf("--config: %v", err)
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, cli.FlagErrorf("--config %s: %v", f.Config, err)
		}
		for k := range raw {
			if !slices.Contains(configKeys, k) {
				return nil, cli.FlagErrorf("--config %s: unknown key %q (known: %s)", f.Config, k, strings.Join(configKeys, ", "))
			}
		}
		var c sessionFlags
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, cli.FlagErrorf("--config %s: %v", f.Config, err)
		}
		changed := cmd.Flags().Changed
		pick := func(name string, set func()) {
			if !changed(name) {
				set()
			}
		}
		pick("venue", func() { f.Venue = c.Venue })
		pick("instruments", func() { f.Instruments = c.Instruments })
		pick("instruments-file", func() { f.InstrumentsFile = c.InstrumentsFile })
		pick("all-markets", func() { f.AllMarkets = c.AllMarkets })
		pick("channels", func() { f.Channels = c.Channels })
		pick("endpoint", func() { f.Endpoint = c.Endpoint })
		pick("rest-endpoint", func() { f.RESTEndpoint = c.RESTEndpoint })
		pick("assets-per-conn", func() { f.AssetsPerConn = c.AssetsPerConn })
		pick("conns", func() { f.Conns = c.Conns })
		pick("clob-endpoint", func() { f.CLOBEndpoint = c.CLOBEndpoint })
		if v, ok := raw["rest_books"]; ok && !changed("rest-books") {
			if err := json.Unmarshal(v, &f.RESTBooks); err != nil {
				return nil, cli.FlagErrorf("--config %s: rest_books: %v", f.Config, err)
			}
		}
	}
	if f.Venue != "polymarket" && f.Venue != "hyperliquid" {
		return nil, cli.FlagErrorf("--venue must be polymarket or hyperliquid, not %q", f.Venue)
	}
	if f.InstrumentsFile != "" {
		ids, err := readInstrumentsFile(f.InstrumentsFile)
		if err != nil {
			return nil, cli.FlagErrorf("--instruments-file: %v", err)
		}
		f.Instruments = append(f.Instruments, ids...)
	}
	if len(f.Instruments) == 0 && !f.AllMarkets {
		return nil, cli.FlagErrorf("give --instruments, --instruments-file or --all-markets")
	}
	if f.Venue == "polymarket" && f.Conns != 0 {
		return nil, cli.FlagErrorf("--conns applies to hyperliquid; Polymarket shards with --assets-per-conn")
	}
	if f.Venue == "hyperliquid" && f.AssetsPerConn != 0 {
		return nil, cli.FlagErrorf("--assets-per-conn applies to polymarket; Hyperliquid spreads with --conns")
	}
	if f.Venue == "polymarket" && len(f.Channels) > 0 && (len(f.Channels) != 1 || f.Channels[0] != "market") {
		return nil, cli.FlagErrorf("--channels applies to hyperliquid (Polymarket has the market channel only)")
	}
	for _, u := range []struct{ flag, v string }{{"--endpoint", f.Endpoint}, {"--rest-endpoint", f.RESTEndpoint}, {"--clob-endpoint", f.CLOBEndpoint}} {
		if u.v != "" && !strings.Contains(u.v, "://") {
			return nil, cli.FlagErrorf("%s %q is not a URL", u.flag, u.v)
		}
	}
	return raw, nil
}

func readInstrumentsFile(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, " \t,") {
			return nil, fmt.Errorf("%s:%d: one instrument per line, got %q", path, n, line)
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

func (f *sessionFlags) spec() recorder.Spec {
	return recorder.Spec{Venue: f.Venue, Endpoint: f.Endpoint, RESTEndpoint: f.RESTEndpoint,
		Instruments: f.Instruments, Channels: f.Channels, AllMarkets: f.AllMarkets,
		AssetsPerConn: f.AssetsPerConn, Conns: f.Conns, CLOBEndpoint: f.CLOBEndpoint, DisableRESTBooks: !f.RESTBooks}
}

// runOptions are the parsed flags of `capture run`.
type runOptions struct {
	sessionFlags
	Out           string
	Rotate        time.Duration
	RotateSize    int64
	FlushInterval time.Duration
	StallTimeout  time.Duration
	InstStall     time.Duration
	MetricsAddr   string
	LogFormat     string
	Queue         int

	Stdout, Stderr io.Writer
	// ready, if set, is called with the metrics listener's address once
	// recording has started (tests).
	ready func(metricsAddr string)
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

Metrics for Prometheus are served on --metrics-addr at /metrics; logs are
structured (--log-format text or json) on standard error.`,
		Example: `  # Two Polymarket tokens
  $ capture run --venue polymarket --instruments 72936048731589292555781174533757608024096898681344338816447372274344589246891,101155325224907042624192777106604175185803921887395325080529159889944296783944 --out pm-day

  # Hyperliquid fast books and top of book, with metrics
  $ capture run --venue hyperliquid --instruments BTC,ETH --channels l2Book+fast,bbo,trades --metrics-addr 127.0.0.1:9464 --out hl-day

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
	fs.DurationVar(&o.Rotate, "rotate", datasets.DefaultSegmentDuration, "start a new segment file after this much time")
	fs.Int64Var(&o.RotateSize, "rotate-size", datasets.DefaultSegmentSize, "start a new segment file after this many bytes")
	fs.DurationVar(&o.FlushInterval, "flush-interval", recorder.DefaultFlushInterval, "seal and write buffered records at least this often (a kill loses at most this much)")
	fs.DurationVar(&o.StallTimeout, "stall-timeout", recorder.DefaultStallTimeout, "replace a connection that carried no data for this long")
	fs.DurationVar(&o.InstStall, "instrument-stall-timeout", -1, "replace a connection when one steady instrument (Hyperliquid l2Book) carried nothing for this long; 0 off (default: --stall-timeout on hyperliquid, off on polymarket)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on `HOST:PORT` at /metrics")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format on standard error: text or json")
	fs.IntVar(&o.Queue, "queue", recorder.DefaultQueueFrames, "frames buffered between the sockets and the disk before dropping (each drop is recorded)")
	return cmd
}

type runConfig struct {
	Out           string `json:"out"`
	Rotate        string `json:"rotate"`
	FlushInterval string `json:"flush_interval"`
	StallTimeout  string `json:"stall_timeout"`
	MetricsAddr   string `json:"metrics_addr"`
}

// applyConfig takes run's own keys from a --config file, under the flags.
func (o *runOptions) applyConfig(cmd *cobra.Command, raw map[string]json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var c runConfig
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &c); err != nil {
		return cli.FlagErrorf("--config: %v", err)
	}
	changed := cmd.Flags().Changed
	dur := func(name, v string, dst *time.Duration) error {
		if v == "" || changed(name) {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return cli.FlagErrorf("--config: %s: %v", strings.ReplaceAll(name, "-", "_"), err)
		}
		*dst = d
		return nil
	}
	if c.Out != "" && !changed("out") {
		o.Out = c.Out
	}
	if c.MetricsAddr != "" && !changed("metrics-addr") {
		o.MetricsAddr = c.MetricsAddr
	}
	return errors.Join(dur("rotate", c.Rotate, &o.Rotate), dur("flush-interval", c.FlushInterval, &o.FlushInterval),
		dur("stall-timeout", c.StallTimeout, &o.StallTimeout))
}

func (o *runOptions) validate(cmd *cobra.Command) error {
	raw, err := o.sessionFlags.load(cmd)
	if err != nil {
		return err
	}
	if err := o.applyConfig(cmd, raw); err != nil {
		return err
	}
	if o.Out == "" {
		return cli.FlagErrorf("--out DATASET is required")
	}
	if _, err := os.Stat(o.Out); err == nil {
		return cli.FlagErrorf("--out %s already exists; a recording never overwrites (choose a new directory)", o.Out)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--rotate", o.Rotate}, {"--flush-interval", o.FlushInterval}, {"--stall-timeout", o.StallTimeout}} {
		if d.v <= 0 {
			return cli.FlagErrorf("%s must be positive, not %v", d.flag, d.v)
		}
	}
	if o.RotateSize <= 0 {
		return cli.FlagErrorf("--rotate-size must be positive, not %d", o.RotateSize)
	}
	if o.Queue < 1 {
		return cli.FlagErrorf("--queue must be positive, not %d", o.Queue)
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return cli.FlagErrorf("--log-format must be text or json, not %q", o.LogFormat)
	}
	if o.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddr); err != nil {
			return cli.FlagErrorf("--metrics-addr %q: %v", o.MetricsAddr, err)
		}
	}
	return nil
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
		recorder.WithStallTimeout(o.StallTimeout), recorder.WithQueue(o.Queue, recorder.DefaultQueueBytes)}
	if o.InstStall >= 0 {
		opts = append(opts, recorder.WithInstrumentStallTimeout(o.InstStall))
	}
	rec, err := recorder.New(o.spec(), opts...)
	if err != nil {
		return err
	}
	plan, err := rec.Prepare(ctx)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	w, err := datasets.Create(o.Out, rec.Manifest(), datasets.WithFlushInterval(o.FlushInterval),
		datasets.WithSegmentDuration(o.Rotate), datasets.WithSegmentSize(o.RotateSize))
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	metricsAddr := ""
	var srv *http.Server
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			w.Close()
			return fmt.Errorf("run: metrics: %w", err)
		}
		metricsAddr = ln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(rec.Gatherer(), promhttp.HandlerOpts{}))
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		log.Info("metrics", "addr", "http://"+metricsAddr+"/metrics")
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
	st := rec.Stats()
	fmt.Fprintf(o.Stdout, "%s\t%d frames\t%d bytes\t%d records\t%d dropped\t%d reconnects\t%d stalls\n",
		o.Out, st.Frames, st.Bytes, st.Records, st.Dropped, st.Reconnects, st.Stalls)
	if err := errors.Join(runErr, closeErr); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
