package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/book"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
)

// booksOptions are the parsed flags of `replay books`.
type booksOptions struct {
	Paths       []string
	AtNs        int64 // books after every record with WallNs ≤ AtNs; 0 = the end
	Instruments []string
	Depth       int    // levels per side; 0 = all
	Format      string // "json" or "table"
	SkipDamaged bool

	Out, ErrOut io.Writer
	Progress    bool // a progress bar on ErrOut
}

func newBooksCmd(runF func(context.Context, *booksOptions) error) *cobra.Command {
	opts := &booksOptions{}
	var at string
	cmd := &cobra.Command{
		Use:   "books DATASET...",
		Short: "Print the reconstructed order books at a moment",
		Long: `Replay datasets up to a moment and print every instrument's book as rebuilt
there: bids and asks best first as plain decimal strings, whether the book is
valid (false after a disconnect, gap or rejected frame until the next
snapshot, and after a confirmed venue hash mismatch until the next snapshot or
matching hash), whether it is crossed, whether it is estimated (a Hyperliquid
book merged with bbo since its last l2Book: the touch is the venue's, deeper
levels may be stale), and the venue hash verdicts: checked = ok + mismatch +
unverifiable (no known last trade price explains the hash and no trade came
within a second of venue time), and pending (still waiting for a trade). Compare it
with a venue snapshot to check a reconstruction.

--at is "end" (the default) or a time as for "replay run": the books after
every record received at or before it. The JSON form is a stable contract:

  {"books":[{"venue":"polymarket","instrument":"<asset_id or coin>",
    "valid":true,"crossed":false,"estimated":false,"bids":[["0.48","100.25"],…],
    "asks":[["0.52","90.5"],…],"hash":{"checked":0,"ok":0,"mismatch":0,"unverifiable":0,"pending":0}}]}

sorted by venue, then instrument. JSON is the default when stdout is not a
terminal, a table when it is.`,
		Example: `  # Every book at the end of a recording, as JSON
  $ replay books --format json datasets/samples/polymarket

  # The top five levels of one instrument ten seconds in, as a table
  $ replay books --at +10s --depth 5 --format table datasets/samples/hyperliquid --instrument BTC`,
		Args: cli.AtLeastOne("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.Progress = cli.IsTerminal(opts.ErrOut)
			var err error
			if opts.Format, err = cli.OutputFormat(opts.Format, false, opts.Out); err != nil {
				return err
			}
			if opts.Depth < 0 {
				return cli.FlagErrorf("--depth %d: want 0 (all levels) or more", opts.Depth)
			}
			if at != "end" {
				var start int64
				var err error
				if strings.HasPrefix(at, "+") {
					if start, err = recordingStart(args); err != nil {
						return err
					}
				}
				if opts.AtNs, err = parseTime(at, start); err != nil {
					return cli.FlagErrorf("--at: %v", err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBooks(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&at, "at", "end", "the moment (`T`: end, or "+cli.TimeSyntax+")")
	cmd.Flags().StringArrayVar(&opts.Instruments, "instrument", nil, "only this instrument (asset id or coin); repeatable")
	cmd.Flags().IntVar(&opts.Depth, "depth", 0, "levels per side to print; 0 prints all")
	cmd.Flags().StringVar(&opts.Format, "format", "", "json or table (default: table on a terminal, json otherwise)")
	cmd.Flags().BoolVar(&opts.SkipDamaged, "skip-damaged", false, skipDamagedUsage)
	return cmd
}

// bookJSON is one element of the `replay books` JSON contract.
type bookJSON struct {
	Venue      string      `json:"venue"`
	Instrument string      `json:"instrument"`
	Valid      bool        `json:"valid"`
	Crossed    bool        `json:"crossed"`
	Estimated  bool        `json:"estimated"`
	Bids       [][2]string `json:"bids"`
	Asks       [][2]string `json:"asks"`
	Hash       hashJSON    `json:"hash"`
}

type hashJSON struct {
	Checked      uint64 `json:"checked"`
	OK           uint64 `json:"ok"`
	Mismatch     uint64 `json:"mismatch"`
	Unverifiable uint64 `json:"unverifiable"`
	Pending      uint64 `json:"pending"`
}

func runBooks(ctx context.Context, opts *booksOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var ropts []replayer.Option
	if opts.AtNs != 0 {
		ropts = append(ropts, replayer.WithWindow(0, opts.AtNs+1))
	}
	ropts = append(ropts, replayer.WithSkipDamaged(opts.SkipDamaged))
	r, err := replayer.New(opts.Paths, ropts...)
	if err != nil {
		return err
	}
	stop := startProgress(r, opts.Progress, opts.ErrOut, 0, opts.AtNs)
	s, err := r.Run(ctx)
	stop()
	if errors.Is(err, replayer.ErrDamaged) {
		return damagedError("books", s, err)
	}
	if err != nil {
		return err
	}
	warnDamaged(opts.ErrOut, s)
	books := collectBooks(r.Books(), opts.Instruments, opts.Depth)
	var missing []string
	for _, id := range opts.Instruments {
		if !slices.ContainsFunc(books, func(b bookJSON) bool { return b.Instrument == id }) {
			missing = append(missing, id)
		}
	}
	if missing != nil {
		return noMatch("books", missing, "nothing printed")
	}
	if opts.Format == "table" {
		// Instrument ids come from the venue: shown, never obeyed, by a terminal.
		return printBooksTable(cli.SafeText(opts.Out), books)
	}
	return json.NewEncoder(opts.Out).Encode(struct {
		Books []bookJSON `json:"books"`
	}{books})
}

// collectBooks converts the replayer's books (already sorted by venue and
// instrument) into the JSON contract's form.
func collectBooks(states []replayer.BookState, only []string, depth int) []bookJSON {
	out := []bookJSON{}
	n := -1
	if depth > 0 {
		n = depth
	}
	var lv []book.Level
	for _, st := range states {
		if len(only) > 0 && !slices.Contains(only, st.Instrument) {
			continue
		}
		bk := st.Book
		b := bookJSON{Venue: st.Venue, Instrument: st.Instrument, Valid: bk.Valid(), Crossed: st.Quality.Crossed,
			Estimated: st.Quality.Estimated, Hash: hashJSON{Checked: st.Quality.HashChecked, OK: st.Quality.HashOK,
				Mismatch: st.Quality.HashMismatch, Unverifiable: st.Quality.HashUnverifiable, Pending: st.Quality.HashPending}}
		lv = bk.Top(book.Bid, lv[:0], n)
		b.Bids = levelStrings(lv, st.Scale)
		lv = bk.Top(book.Ask, lv[:0], n)
		b.Asks = levelStrings(lv, st.Scale)
		out = append(out, b)
	}
	return out
}

func levelStrings(lv []book.Level, s book.Scale) [][2]string {
	out := make([][2]string, len(lv))
	for i, l := range lv {
		out[i] = [2]string{book.FormatDecimal(l.Price, s.PriceDecimals), book.FormatDecimal(l.Size, s.SizeDecimals)}
	}
	return out
}

func printBooksTable(w io.Writer, books []bookJSON) error {
	for i, b := range books {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := "valid"
		if !b.Valid {
			state = "INVALID"
		}
		if b.Crossed {
			state += ", CROSSED"
		}
		if b.Estimated {
			state += ", estimated (bbo since the last snapshot)"
		}
		fmt.Fprintf(w, "%s %s: %s, hash %d ok, %d mismatch, %d unverifiable of %d\n", b.Venue, b.Instrument, state,
			b.Hash.OK, b.Hash.Mismatch, b.Hash.Unverifiable, b.Hash.Checked)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "bid size\tbid\task\task size\t\n")
		for k := range max(len(b.Bids), len(b.Asks)) {
			var bs, bp, ap, as string
			if k < len(b.Bids) {
				bp, bs = b.Bids[k][0], b.Bids[k][1]
			}
			if k < len(b.Asks) {
				ap, as = b.Asks[k][0], b.Asks[k][1]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", bs, bp, ap, as)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
