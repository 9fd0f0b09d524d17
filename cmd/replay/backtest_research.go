package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tapedeck/tapedeck/backtest"
	"github.com/tapedeck/tapedeck/backtest/research"
	"github.com/tapedeck/tapedeck/columnar"
	"github.com/tapedeck/tapedeck/feed"
	"github.com/tapedeck/tapedeck/internal/cli"
	"github.com/tapedeck/tapedeck/replayer"
)

const researchHelp = `
Research runs decode the market once and simulate many runs on it: each
(point, strategy) has its own simulated exchange, account, orders, queue
estimates and latencies, and meets the recorded market only (runs never trade
with each other); each run's fills and digest equal those of a separate
"replay backtest" with the same parameters.
  --strategy mm,complement   several strategies side by side, one account each
  --sweep NAME=LO:HI:STEP    a range (decimal steps), or NAME=V1,V2,… a list;
                             several --sweep flags make a grid (STRATEGY.NAME
                             for one strategy's parameter)
  --sweep-file grid.csv      an explicit list of points: a header of names,
                             one row per point
  --shard K/N                with a sweep: only the points whose index is
                             K−1 modulo N; "replay backtest merge" joins the
                             shards' tables (csv, parquet or arrow) into the
                             unsharded one
  --walk TRAIN/TEST          walk-forward (e.g. 1d/1d, 6h/2h): every point on
                             each train window, each strategy's best by
                             --objective on the next test window, the test
                             windows' equity stitched out of sample
  --report FILE.html         a tearsheet: one self-contained HTML file
A sweep prints one row per run (--json: every figure) and, with --out DIR,
writes DIR/sweep.csv (or .parquet/.arrow by --format: point, strategy, every
swept name, pnl, fees, rebates, funding, turnover, fill_ratio, max_drawdown,
sharpe, sortino, markout_*, orders, fills, digest) and each run's tables in
DIR/runs/POINT-STRATEGY/.`

const researchExamples = `
  # A 15-point grid on one replay, the table and each run's tables in sweep/
  $ replay backtest datasets/samples/polymarket --strategy mm \
      --sweep spread=0.01:0.05:0.01 --sweep size=5,10,20 --out sweep/ --report sweep.html

  # The same sweep split over 4 jobs (a Kubernetes Indexed Job, a Slurm array), then joined
  $ replay backtest datasets/samples/polymarket --strategy mm --sweep spread=0.01:0.05:0.01 \
      --shard 2/4 --format parquet --out part-2/
  $ replay backtest merge --out sweep.parquet part-*/sweep.parquet

  # Walk-forward: choose the spread on each hour, trade it the next 30 minutes
  $ replay backtest DATASET --strategy mm --sweep spread=0.01,0.02,0.04 --walk 1h/30m --objective pnl`

// researchFlags are the flags of research runs.
type researchFlags struct {
	sweeps    []string
	sweepFile string
	walk      string
	objective string
	report    string
	workers   int
}

func (r *researchFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&r.sweeps, "sweep", nil, "sweep a parameter: `NAME=LO:HI:STEP` or NAME=V1,V2,… (repeatable: a grid)")
	f.StringVar(&r.sweepFile, "sweep-file", "", "sweep the points listed in a CSV `FILE` (header: parameter names)")
	f.StringVar(&r.walk, "walk", "", "walk-forward `TRAIN/TEST` windows, e.g. 1d/1d or 6h/2h")
	f.StringVar(&r.objective, "objective", "pnl", "what a walk-forward chooses by and the tearsheet's heatmap shows: "+strings.Join(research.Objectives, ", "))
	f.StringVar(&r.report, "report", "", "write a tearsheet to `FILE.html` (self-contained: inline SVG, no script)")
	f.IntVar(&r.workers, "workers", 0, "goroutines stepping the runs of one replay, in lockstep (0: 2 from 8 runs up with 3 or more cores, else 1; with 2 cores a second worker does not reliably pay)")
}

// active reports whether the flags ask for a research run rather than one
// strategy's run.
func (r *researchFlags) active(strategy string) bool {
	return len(r.sweeps) > 0 || r.sweepFile != "" || r.walk != "" || r.report != "" || strings.Contains(strategy, ",")
}

func runResearch(ctx context.Context, o *backtestOptions, cfg backtest.Config, given backtest.Params,
	replay []replayer.Option, f columnar.Format, opts columnar.Options) error {
	rf := &o.research
	job := &research.Job{Paths: o.Datasets, Params: given, Config: cfg, Replay: replay}
	for _, s := range strings.Split(o.Strategy, ",") {
		job.Strategies = append(job.Strategies, strings.TrimSpace(s))
	}
	if len(rf.sweeps) > 0 && rf.sweepFile != "" {
		return cli.FlagErrorf("--sweep and --sweep-file: give one or the other")
	}
	var axes []research.Axis
	for _, s := range rf.sweeps {
		a, err := research.ParseAxis(s)
		if err != nil {
			return cli.FlagErrorf("--sweep: %v", err)
		}
		axes = append(axes, a)
		job.Axes = append(job.Axes, a.Name)
	}
	var err error
	if len(axes) > 0 {
		if job.Points, err = research.Grid(axes); err != nil {
			return cli.FlagErrorf("--sweep: %v", err)
		}
	}
	if rf.sweepFile != "" {
		fh, err := os.Open(rf.sweepFile)
		if err != nil {
			return cli.FlagErrorf("--sweep-file: %v", err)
		}
		job.Axes, job.Points, err = research.ReadGrid(fh)
		fh.Close()
		if err != nil {
			return cli.FlagErrorf("--sweep-file: %v", err)
		}
	}
	sh, err := replayer.ParseShard(o.Shard)
	if err != nil {
		return cli.FlagErrorf("--shard: %v", err)
	}
	if len(job.Points) > 0 {
		job.Shard = sh
	} else {
		cfg.Shard, job.Config.Shard = sh, sh
	}
	if _, ok := (&research.Metrics{}).Objective(rf.objective); !ok {
		return cli.FlagErrorf("--objective %q: want %s", rf.objective, strings.Join(research.Objectives, ", "))
	}
	job.Workers = rf.workers
	if _, _, err := job.Plan(); err != nil {
		return cli.FlagErrorf("%v", err)
	}
	if job.Workers == 0 {
		job.Workers = backtest.DefaultWorkers(len(job.Strategies) * max(1, len(job.Points)))
	}
	if err := outsideInputs("backtest", rf.report, o.Datasets); err != nil {
		return err
	}
	sheet := &research.Sheet{Title: "Backtest: " + o.Strategy, Datasets: o.Datasets, Axes: job.Axes, Objective: rf.objective}
	if rf.walk != "" {
		return runWalk(ctx, o, job, sheet)
	}
	if rf.report != "" {
		sheet.Books = research.NewBookSampler()
	}
	progress := cli.IsTerminal(o.Stderr)
	var stop func()
	job.Started = func(rp *replayer.Replayer) {
		stop = cli.FollowTime(progress, o.Stderr, fmt.Sprintf("backtest %d runs", len(job.Strategies)*max(1, len(job.Points))), rp.StartNs(), rp.EndNs(), rp.Position)
	}
	job.Also = sheetSubscribers(sheet)
	// Without tables or a tearsheet, several runs show their summaries
	// only: the runs keep no series, orders or fills once done (one run
	// prints its rejections from its orders).
	job.SummaryOnly = o.Out == "" && rf.report == "" && len(job.Strategies)*max(1, len(job.Points)) > 1
	runs, sum, err := job.Execute(ctx)
	if stop != nil {
		stop()
	}
	if err != nil {
		return backtestError(err)
	}
	if err := checkIDs(cfg, runs[0].Result); err != nil {
		return err
	}
	switch {
	case o.Out == "":
	case len(runs) == 1 && len(job.Points) == 0:
		// One run (a --report of a single strategy): its tables as without.
		if err := runs[0].Result.WriteTables(o.Out, f, sourced(opts, o.Datasets)); err != nil {
			return err
		}
	default:
		if err := writeSweep(o, runs, job.Axes, f, opts); err != nil {
			return err
		}
	}
	if rf.report != "" {
		sheet.Runs, sheet.Replay, sheet.Main = runs, sum, best(runs, rf.objective)
		if err := writeFileAtomic(rf.report, sheet.WriteHTML); err != nil {
			return err
		}
	}
	if len(runs) == 1 {
		return printBacktest(o.Stdout, o.Stderr, runs[0].Result, o.JSON)
	}
	return research.PrintSweep(o.Stdout, runs, job.Axes, o.JSON)
}

func sheetSubscribers(s *research.Sheet) []feed.Subscriber {
	if s.Books == nil {
		return nil
	}
	return []feed.Subscriber{s.Books}
}

// best is the run with the highest objective, the first on a tie.
func best(runs []*research.Run, objective string) *research.Run {
	var b *research.Run
	bv := 0.0
	for _, r := range runs {
		v, _ := r.Metrics.Objective(objective)
		if b == nil || v > bv {
			b, bv = r, v
		}
	}
	return b
}

func runDir(r *research.Run) string { return fmt.Sprintf("%04d-%s", r.Point.Index, r.Strategy) }

func writeSweep(o *backtestOptions, runs []*research.Run, axes []string, f columnar.Format, opts columnar.Options) error {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	name := filepath.Join(o.Out, "sweep"+backtest.Extension(f))
	err := writeFileAtomic(name, func(w io.Writer) error {
		return research.WriteTable(w, runs, axes, o.Shard, f, opts)
	})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := r.Result.WriteTables(filepath.Join(o.Out, "runs", runDir(r)), f, sourced(opts, o.Datasets)); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, write func(io.Writer) error) error {
	return backtest.WriteFile(path, func(w *bufio.Writer) error { return write(w) })
}

func runWalk(ctx context.Context, o *backtestOptions, job *research.Job, sheet *research.Sheet) error {
	train, test, err := research.ParseWalk(o.research.walk)
	if err != nil {
		return cli.FlagErrorf("--walk: %v", err)
	}
	if o.From != "" || o.To != "" {
		return cli.FlagErrorf("--walk splits the whole recording: leave out --from and --to")
	}
	if !job.Shard.Whole() {
		return cli.FlagErrorf("--walk runs every point on every window: leave out --shard")
	}
	job.Replay = []replayer.Option{replayer.WithHashCheck(o.Hash)}
	wk, err := job.WalkForward(ctx, train, test, o.research.objective)
	if err != nil {
		return backtestError(err)
	}
	var results []*backtest.Result
	for _, w := range wk.Windows {
		for _, c := range w.Chosen {
			results = append(results, c.Test.Result)
		}
	}
	if err := checkIDs(job.Config, results...); err != nil {
		return err
	}
	if o.research.report != "" {
		sheet.Walk = wk
		if err := writeFileAtomic(o.research.report, sheet.WriteHTML); err != nil {
			return err
		}
	}
	if o.Out != "" {
		f, opts, err := backtestOutput(o.Format, o.Compression, o.BatchRows)
		if err != nil {
			return err
		}
		var runs []*research.Run
		for i, w := range wk.Windows {
			for _, c := range w.Chosen {
				if err := c.Test.Result.WriteTables(filepath.Join(o.Out, "windows", fmt.Sprintf("%03d-%s", i+1, c.Strategy)), f, sourced(opts, o.Datasets)); err != nil {
					return err
				}
				runs = append(runs, c.Test)
			}
		}
		if err := writeFileAtomic(filepath.Join(o.Out, "walk"+backtest.Extension(f)), func(w io.Writer) error {
			return research.WriteTable(w, runs, job.Axes, "", f, opts)
		}); err != nil {
			return err
		}
	}
	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(wk.Report())
	}
	return wk.WriteTable(o.Stdout)
}
