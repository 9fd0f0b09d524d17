package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/recorder"
	"github.com/tapedeck/tapedeck/venue/registry"
)

// sessionFlags are what run and plan share: what to record and where from.
// A --config file provides defaults; flags given on the command line win.
type sessionFlags struct {
	Config          string
	Venue           string
	Instruments     []string
	InstrumentsFile string
	AllMarkets      bool
	Channels        []string
	Endpoint        string
	RESTEndpoint    string
	AssetsPerConn   int
	Conns           int
	CLOBEndpoint    string
	RESTBooks       bool
}

func (f *sessionFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Config, "config", "", "JSON `FILE` of settings (keys as the flags, with _ for -); flags override it")
	fs.StringVar(&f.Venue, "venue", "", registry.Choice()+" (required)")
	fs.StringSliceVar(&f.Instruments, "instruments", nil, "`IDS`: Polymarket token ids, market slugs or condition ids; Hyperliquid coins (comma-separated)")
	fs.StringVar(&f.InstrumentsFile, "instruments-file", "", "`FILE` with one instrument per line (# comments)")
	fs.BoolVar(&f.AllMarkets, "all-markets", false, "record every listed market (Polymarket: active markets, following new and resolved ones; Hyperliquid: every meta and spotMeta coin)")
	fs.StringSliceVar(&f.Channels, "channels", nil, "Hyperliquid `CHANNELS`: l2Book, l2Book+fast, l2Book+nSigFigs=5+mantissa=2, bbo, trades, allMids, activeAssetCtx, candle+interval=1m (default l2Book,trades)")
	fs.StringVar(&f.Endpoint, "endpoint", "", "WebSocket `URL` (default: the venue's public endpoint); any other endpoint's host also serves the REST requests unless --rest-endpoint/--clob-endpoint say otherwise")
	fs.StringVar(&f.RESTEndpoint, "rest-endpoint", "", "discovery `URL`: Polymarket Gamma base, Hyperliquid info (default: the venue's, or derived from a non-default --endpoint)")
	fs.IntVar(&f.AssetsPerConn, "assets-per-conn", 0, "Polymarket assets per connection, 1..500 (default 200)")
	fs.IntVar(&f.Conns, "conns", 0, "Hyperliquid connections to spread subscriptions over, up to 10 (default: as few as possible)")
	fs.BoolVar(&f.RESTBooks, "rest-books", true, "Polymarket: before every (re)connect, store the connection's REST book summaries so a replay can check book hashes (ignored for hyperliquid)")
	fs.StringVar(&f.CLOBEndpoint, "clob-endpoint", "", "Polymarket CLOB REST base `URL` for the book summaries (default: the venue's, or a non-default --endpoint's host)")
}

// load applies the --config file under the flags (its keys are the verb's
// flags, ignored further keys accepted and skipped) and validates, naming
// flags.
func (f *sessionFlags) load(cmd *cobra.Command, ignored ...string) error {
	if err := cli.ApplyConfig(cmd.Flags(), f.Config, ignored...); err != nil {
		return err
	}
	drv, err := registry.Lookup(f.Venue)
	if err != nil {
		return cli.FlagErrorf("--venue must be %s, not %q", registry.Choice(), f.Venue)
	}
	if f.InstrumentsFile != "" {
		ids, err := readInstrumentsFile(f.InstrumentsFile)
		if err != nil {
			return cli.FlagErrorf("--instruments-file: %v", err)
		}
		f.Instruments = append(f.Instruments, ids...)
	}
	if len(f.Instruments) == 0 && !f.AllMarkets {
		return cli.FlagErrorf("give --instruments, --instruments-file or --all-markets")
	}
	client := drv.Client()
	if facts := client.Facts(); facts.ShardByItems && f.Conns != 0 {
		return cli.FlagErrorf("--conns does not apply to %s, which shards with --assets-per-conn", f.Venue)
	} else if !facts.ShardByItems && f.AssetsPerConn != 0 {
		return cli.FlagErrorf("--assets-per-conn does not apply to %s, which spreads with --conns", f.Venue)
	} else if facts.ShardByItems && cmd.Flags().Changed("assets-per-conn") && (f.AssetsPerConn < 1 || f.AssetsPerConn > facts.MaxConnItems) {
		// 0 is the unset value inside; given, it is no size.
		return cli.FlagErrorf("--assets-per-conn %d: want 1..%d", f.AssetsPerConn, facts.MaxConnItems)
	}
	if _, err := client.Channels(f.Channels); err != nil {
		return cli.FlagErrorf("--channels: %v", err)
	}
	for _, u := range []struct{ flag, v string }{{"--endpoint", f.Endpoint}, {"--rest-endpoint", f.RESTEndpoint}, {"--clob-endpoint", f.CLOBEndpoint}} {
		if u.v != "" && !strings.Contains(u.v, "://") {
			return cli.FlagErrorf("%s %q is not a URL", u.flag, u.v)
		}
	}
	return nil
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
