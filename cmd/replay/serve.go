package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/serve"
	"github.com/tapedeck/tapedeck/venue/registry"
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

	ErrOut io.Writer
	// Ready, if set, is called on a goroutine of its own with the listening
	// address as the server starts accepting (tests use it with --listen
	// 127.0.0.1:0).
	Ready func(addr net.Addr)
}

func newServeCmd(runF func(context.Context, *serveCmdOptions) error) *cobra.Command {
	opts := &serveCmdOptions{}
	var speed string
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
server and prints what it served.`,
		Example: `  # Serve the Hyperliquid sample at wire speed; point a client at ws://127.0.0.1:8765/ws
  $ replay serve datasets/samples/hyperliquid --listen 127.0.0.1:8765

  # Ten times faster, each connection closed at the end of the recording
  $ replay serve datasets/samples/hyperliquid --listen 127.0.0.1:8765 --speed 10x --close-at-end

  # The Polymarket sample as fast as the client reads (ws://127.0.0.1:8766/ws/market)
  $ replay serve datasets/samples/polymarket --listen 127.0.0.1:8766 --speed max`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.ErrOut = cmd.ErrOrStderr()
			var err error
			if opts.Speed, err = replayer.ParseSpeed(speed); err != nil {
				return cli.FlagErrorf("--speed: %v", err)
			}
			if err := checkServeListen(opts.Listen); err != nil {
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
	return cmd
}

// checkServeListen accepts HOST:PORT with a numeric port.
func checkServeListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
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
	s, err := serve.New(opts.Paths, sopts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	path := "/ws" // any path is served; this is the venue's
	if d, err := registry.Lookup(s.Venue()); err == nil {
		path = d.Endpoints().ServePath
	}
	fmt.Fprintf(opts.ErrOut, "serving %s recording at ws://%s%s (speed %s); Ctrl-C to stop\n",
		s.Venue(), ln.Addr(), path, opts.Speed)
	if opts.Ready != nil {
		go opts.Ready(ln.Addr())
	}
	err = s.Serve(ctx, ln)
	st := s.Stats()
	fmt.Fprintf(opts.ErrOut, "served %d connections: %d frames (%s); %d slow clients disconnected; %d over a client limit; %d replays stopped by read errors\n",
		st.Connections, st.FramesSent, humanBytes(st.BytesSent), st.SlowDisconnects, st.OverLimit, st.ReadErrors)
	if k := st.Skipped; k != (replayer.Skipped{}) {
		fmt.Fprintf(opts.ErrOut, "not waited out: %s\n", skippedText(&k))
	}
	return err
}
