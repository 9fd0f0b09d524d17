package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// peersCommand is the command line the docs name as the generator of their
// tardis-dev blocks.
const peersCommand = "make bench-peers"

type peersOptions struct {
	Rounds    int
	Cache     string // tardis-dev cache made by bench/peers/gen_polymarket_cache.py
	Dataset   string // the same recording imported into a tapedeck dataset
	Replay    string // the replay binary under test
	TardisDir string // folder whose node_modules holds tardis-dev
	Books     bool
	JSON      string // where the result goes
	Command   string // recorded as the result's command
	Note      string
	Publish   bool // also copy the result to bench/RESULTS-peers.json and regenerate the docs

	Stdout, Stderr io.Writer
}

func newPeersCmd(runF func(*peersOptions) error) *cobra.Command {
	opts := &peersOptions{}
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "Time tapedeck and tardis-dev on one recording, alternated; write the JSON result",
		Long: `Peers runs, --rounds times, each workload once as its own process over every
frame of one generated Polymarket recording (scripts/bench-peers.sh makes it):
tardis-dev raw (replay, skipDecoding), tapedeck replay run, tardis-dev books
(replayNormalized + computeBookSnapshots, depth 25, every change) and tapedeck
replay export --table depth --levels 25 --every-event --format csv. Odd rounds
run them in that order, even rounds in reverse. Each pass is timed from outside
(wall, and user + system CPU from the OS); every pass must read the recording's
frames, tardis-dev must make no API request and tapedeck must give one digest.

The result (machine, load average, Go/node/tardis-dev versions, the recording's
frame count and SHA-256, every pass, medians, same-run ratios) goes to --json.
--publish also copies it to bench/RESULTS-peers.json and rewrites the
bench-peers blocks of bench/RESULTS.md and README.md from it (as peers-results).`,
		Example: `  benchrun peers --cache bench/out/peers/cache-15m --dataset bench/out/peers/dataset-15m --publish`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Rounds < 1 {
				return cli.FlagErrorf("--rounds %d: want at least 1", opts.Rounds)
			}
			if opts.Cache == "" || opts.Dataset == "" {
				return cli.FlagErrorf("--cache and --dataset are required (scripts/bench-peers.sh makes them)")
			}
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return runPeers(opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Rounds, "rounds", 3, "alternated rounds")
	f.StringVar(&opts.Cache, "cache", "", "the tardis-dev cache of the recording (with its SUMMARY.json)")
	f.StringVar(&opts.Dataset, "dataset", "", "the recording as a tapedeck dataset")
	f.StringVar(&opts.Replay, "replay", "bench/out/peers/bin/replay", "the replay binary to measure")
	f.StringVar(&opts.TardisDir, "tardis-dir", "bench/peers", "folder whose node_modules holds tardis-dev")
	f.BoolVar(&opts.Books, "books", true, "also run the two book modes (tardis-dev's takes about 40 s a pass)")
	f.StringVar(&opts.JSON, "json", "bench/out/peers/peers.json", "where to write the result")
	f.StringVar(&opts.Command, "command", peersCommand, "the command line recorded in the result")
	f.StringVar(&opts.Note, "note", "", "the conditions, recorded in the result and the docs (e.g. \"provisional: other benchmarks ran beside it\")")
	f.BoolVar(&opts.Publish, "publish", false, "copy the result to "+bench.PeersFile+" and regenerate the docs' bench-peers blocks")
	return cmd
}

type peersResultsOptions struct {
	Input   string
	Results string
	Readme  string
	Check   bool

	Stderr io.Writer
}

func newPeersResultsCmd(runF func(*peersResultsOptions) error) *cobra.Command {
	opts := &peersResultsOptions{}
	cmd := &cobra.Command{
		Use:   "peers-results",
		Short: "Rewrite the bench-peers blocks of bench/RESULTS.md and README.md from the JSON result",
		Long: `Peers-results rewrites the text between <!-- bench-peers:begin --> and
<!-- bench-peers:end --> in bench/RESULTS.md (the tardis-dev section) and in
README.md (the table beside tardis-dev) from a make bench-peers result, by
default the committed bench/RESULTS-peers.json. The output depends on the JSON
only. --check changes nothing and exits 3 when a block differs from what the
JSON gives.`,
		Example: `  benchrun peers-results
  benchrun peers-results --check`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Stderr = cmd.ErrOrStderr()
			if runF != nil {
				return runF(opts)
			}
			return runPeersResults(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Input, "input", bench.PeersFile, "the make bench-peers result")
	f.StringVar(&opts.Results, "results", "bench/RESULTS.md", "the RESULTS.md to rewrite")
	f.StringVar(&opts.Readme, "readme", "README.md", "the README to rewrite")
	f.BoolVar(&opts.Check, "check", false, "only check that both blocks are what the JSON gives")
	return cmd
}

func runPeersResults(opts *peersResultsOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	p, err := bench.ReadPeersResult(e.abs(opts.Input))
	if err != nil {
		return err
	}
	return publishPeers(e, p, filepath.ToSlash(opts.Input), e.abs(opts.Results), e.abs(opts.Readme), opts.Check, opts.Stderr)
}

// publishPeers rewrites (or, with check, compares) the bench-peers blocks
// of the two docs from p.
func publishPeers(e *env, p *bench.PeersResult, source, resultsPath, readmePath string, check bool, stderr io.Writer) error {
	results, err := os.ReadFile(resultsPath)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	newResults, newReadme, err := bench.RegeneratePeersDocs(p, source, results, readme)
	if err != nil {
		return err
	}
	var stale []string
	for _, f := range []struct {
		path     string
		old, new []byte
	}{{resultsPath, results, newResults}, {readmePath, readme, newReadme}} {
		if bytes.Equal(f.old, f.new) {
			fmt.Fprintf(stderr, "%s: up to date with %s\n", e.rel(f.path), source)
			continue
		}
		if check {
			stale = append(stale, e.rel(f.path))
			continue
		}
		if err := os.WriteFile(f.path, f.new, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s: bench-peers block rewritten from %s\n", e.rel(f.path), source)
	}
	if len(stale) > 0 {
		return &cli.ProblemError{Err: fmt.Errorf("%s: not what %s gives (make bench-peers-results)", strings.Join(stale, ", "), source)}
	}
	return nil
}

// rel is path relative to the module root when it is inside it.
func (e *env) rel(path string) string {
	if r, err := filepath.Rel(e.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return path
}

// cacheSummary is what bench/peers/gen_polymarket_cache.py writes beside the
// cache (SUMMARY.json).
type cacheSummary struct {
	Args struct {
		Minutes int    `json:"minutes"`
		Seed    string `json:"seed"`
	} `json:"args"`
	From       string `json:"from"`
	To         string `json:"to"`
	Frames     int64  `json:"frames"`
	TextBytes  int64  `json:"text_bytes"`
	GzBytes    int64  `json:"gz_bytes"`
	TextSHA256 string `json:"text_sha256_all_minutes_concatenated"`
	Markets    int    `json:"markets"`
	Tokens     int    `json:"tokens"`
	Counts     struct {
		Book               int64 `json:"book"`
		PriceChangeEntries int64 `json:"price_change_entries"`
	} `json:"counts"`
}

// tardisOut is one line of bench/peers/bench_replay.cjs.
type tardisOut struct {
	Node          string  `json:"node"`
	TardisDev     string  `json:"tardis_dev"`
	Seconds       float64 `json:"seconds"`
	CPUUserS      float64 `json:"cpu_user_s"`
	CPUSysS       float64 `json:"cpu_sys_s"`
	StubRequests  *int    `json:"stub_requests"`
	Msgs          int64   `json:"msgs"`
	BookChanges   int64   `json:"book_changes"`
	BookSnapshots int64   `json:"book_snapshots"`
}

func runPeers(opts *peersOptions) error {
	e, err := newEnv(opts.Stderr)
	if err != nil {
		return err
	}
	cache, dataset, replay, tardisDir := e.abs(opts.Cache), e.abs(opts.Dataset), e.abs(opts.Replay), e.abs(opts.TardisDir)
	var sum cacheSummary
	if b, err := os.ReadFile(filepath.Join(cache, "SUMMARY.json")); err != nil {
		return fmt.Errorf("the recording's summary: %w (scripts/bench-peers.sh generates the cache)", err)
	} else if err := json.Unmarshal(b, &sum); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(opts.Cache, "SUMMARY.json"), err)
	}
	if sum.Frames <= 0 || sum.From == "" || sum.To == "" {
		return fmt.Errorf("%s: no frames or no from/to", filepath.Join(opts.Cache, "SUMMARY.json"))
	}
	goVersion, err := binaryGoVersion(e, replay)
	if err != nil {
		return err
	}
	env := bench.CurrentEnv()
	p := &bench.PeersResult{
		Schema:  bench.PeersSchema,
		Command: opts.Command,
		Started: time.Now().UTC().Format(time.RFC3339),
		Commit:  bench.Commit(e.root),
		Machine: bench.PeersMachine{CPU: env.CPU, Cores: env.Cores, GOOS: env.GOOS, GOARCH: env.GOARCH,
			MemTotalKB: env.MemTotalKB, Kernel: kernel(), LoadAvgStart: env.LoadAvg, Note: opts.Note},
		Versions: bench.PeersVersions{Go: goVersion},
		Recording: bench.PeersRecording{Generator: "bench/peers/gen_polymarket_cache.py", Seed: sum.Args.Seed, Minutes: sum.Args.Minutes,
			From: sum.From, To: sum.To, Frames: sum.Frames, TextBytes: sum.TextBytes, GzBytes: sum.GzBytes,
			TextSHA256: sum.TextSHA256, Markets: sum.Markets, Tokens: sum.Tokens},
		Rounds: opts.Rounds,
	}
	relCache, relDataset, relReplay, relTardis := e.rel(cache), e.rel(dataset), e.rel(replay), e.rel(tardisDir)
	tardisArgs := func(mode string) []string {
		return []string{"bench/peers/bench_replay.cjs", "--tardis-dir", tardisDir, "--cache", cache, "--from", sum.From, "--to", sum.To, "--mode", mode}
	}
	commands := map[string][]string{
		bench.PeerTardisRaw:     {"node", "bench/peers/bench_replay.cjs", "--tardis-dir", relTardis, "--cache", relCache, "--from", sum.From, "--to", sum.To, "--mode", "raw-skip"},
		bench.PeerTapedeckRun:   {relReplay, "run", relDataset, "--json"},
		bench.PeerTardisBooks:   {"node", "bench/peers/bench_replay.cjs", "--tardis-dir", relTardis, "--cache", relCache, "--from", sum.From, "--to", sum.To, "--mode", "normalized"},
		bench.PeerTapedeckDepth: {relReplay, "export", relDataset, "--table", "depth", "--levels", "25", "--every-event", "--format", "csv", "--out", "-"},
	}
	for _, w := range bench.PeersWorkloads {
		if w.Mode == "books" && !opts.Books {
			continue
		}
		w.Command = strings.Join(commands[w.ID], " ")
		if w.ID == bench.PeerTapedeckDepth {
			w.Command += " > /dev/null"
		}
		p.Workloads = append(p.Workloads, w)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node is needed to run tardis-dev: %w", err)
	}
	one := func(round int, id string) (bench.PeersRun, error) {
		var name string
		var args []string
		switch id {
		case bench.PeerTardisRaw:
			name, args = node, tardisArgs("raw-skip")
		case bench.PeerTardisBooks:
			name, args = node, tardisArgs("normalized")
		case bench.PeerTapedeckRun:
			name, args = replay, []string{"run", dataset, "--json"}
		case bench.PeerTapedeckDepth:
			name, args = replay, slices.Clone(commands[id][1:])
			args[1] = dataset
		}
		cmd := exec.Command(name, args...)
		cmd.Dir = e.root
		var stdout, stderr bytes.Buffer
		cmd.Stderr = &stderr
		if id == bench.PeerTapedeckDepth {
			devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				return bench.PeersRun{}, err
			}
			defer devnull.Close()
			cmd.Stdout = devnull
		} else {
			cmd.Stdout = &stdout
		}
		r := bench.PeersRun{Round: round, Workload: id, LoadAvg: bench.CurrentEnv().LoadAvg}
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if err != nil {
			return r, fmt.Errorf("round %d, %s: %s: %v\n%s", round, id, commands[id][0], err, tail(stderr.String(), 20))
		}
		ps := cmd.ProcessState
		r.ProcessWallS = wall.Seconds()
		r.ProcessCPUS = (ps.UserTime() + ps.SystemTime()).Seconds()
		r.MaxRSSMB = float64(bench.ChildMaxRSS(ps)) / 1e6
		r.Timer, r.WallS, r.CPUS = "process", r.ProcessWallS, r.ProcessCPUS
		switch id {
		case bench.PeerTardisRaw, bench.PeerTardisBooks:
			var o tardisOut
			if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &o); err != nil {
				return r, fmt.Errorf("round %d, %s: the harness's output %q: %w", round, id, tail(stdout.String(), 20), err)
			}
			if o.StubRequests == nil || *o.StubRequests != 0 {
				return r, fmt.Errorf("round %d, %s: tardis-dev asked its API (stub_requests %v): the cache does not hold the whole recording", round, id, o.StubRequests)
			}
			if (p.Versions.Node != "" && o.Node != p.Versions.Node) || (p.Versions.TardisDev != "" && o.TardisDev != p.Versions.TardisDev) {
				return r, fmt.Errorf("round %d, %s: node %s, tardis-dev %s, but earlier passes ran %s and %s", round, id, o.Node, o.TardisDev, p.Versions.Node, p.Versions.TardisDev)
			}
			p.Versions.Node, p.Versions.TardisDev = o.Node, o.TardisDev
			if !(o.Seconds > 0) {
				return r, fmt.Errorf("round %d, %s: the harness timed %v s", round, id, o.Seconds)
			}
			r.Timer, r.WallS, r.CPUS = "tool", o.Seconds, o.CPUUserS+o.CPUSysS
			if id == bench.PeerTardisRaw {
				r.Frames = o.Msgs
			} else {
				// The harness counts what it produces; its input is the whole
				// recording (every book_change of it is counted).
				r.Frames, r.Rows = sum.Frames, o.BookSnapshots
				if want := sum.Counts.PriceChangeEntries + sum.Counts.Book; o.BookChanges < want {
					return r, fmt.Errorf("round %d, %s: %d book changes, but the recording's book frames and price changes give at least %d: it did not read them all", round, id, o.BookChanges, want)
				}
			}
		case bench.PeerTapedeckRun:
			var o struct {
				Frames       int64  `json:"frames"`
				WallNS       int64  `json:"wall_ns"`
				Digest       string `json:"digest"`
				DecodeErrors int64  `json:"decode_errors"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &o); err != nil {
				return r, fmt.Errorf("round %d, %s: replay run --json: %w", round, id, err)
			}
			if o.DecodeErrors != 0 {
				return r, fmt.Errorf("round %d, %s: %d decode errors", round, id, o.DecodeErrors)
			}
			if o.WallNS <= 0 {
				return r, fmt.Errorf("round %d, %s: replay run --json: wall_ns %d", round, id, o.WallNS)
			}
			// replay run times its replay, not the process; its CPU is the
			// process's (Go's start-up is milliseconds).
			r.Frames, r.Timer, r.WallS, r.Digest = o.Frames, "tool", float64(o.WallNS)/1e9, o.Digest
		case bench.PeerTapedeckDepth:
			// replay export says nothing on a stderr that is not a terminal;
			// it reads the whole dataset (exit 0: no damage, nothing skipped),
			// which replay run counted.
			r.Frames = sum.Frames
		}
		if r.Frames != sum.Frames {
			return r, fmt.Errorf("round %d, %s: read %d frames, but the recording has %d", round, id, r.Frames, sum.Frames)
		}
		return r, nil
	}

	for round := 1; round <= opts.Rounds; round++ {
		order := slices.Clone(p.Workloads)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, w := range order {
			fmt.Fprintf(opts.Stderr, "bench-peers: round %d/%d: %s… ", round, opts.Rounds, w.ID)
			r, err := one(round, w.ID)
			if err != nil {
				fmt.Fprintln(opts.Stderr)
				return err
			}
			fmt.Fprintf(opts.Stderr, "%.2f s (process %.2f s), %.2f CPU-s, %s frames/s\n", r.WallS, r.ProcessWallS, r.CPUS, strconv.FormatFloat(float64(r.Frames)/r.WallS, 'f', 0, 64))
			if r.Digest != "" {
				if p.Recording.TapedeckDigest != "" && r.Digest != p.Recording.TapedeckDigest {
					return fmt.Errorf("round %d, %s: digest %s, but an earlier round gave %s", round, w.ID, r.Digest, p.Recording.TapedeckDigest)
				}
				p.Recording.TapedeckDigest = r.Digest
			}
			p.Runs = append(p.Runs, r)
		}
	}
	p.Machine.LoadAvgEnd = bench.CurrentEnv().LoadAvg
	for i := range p.Workloads {
		w := &p.Workloads[i]
		switch w.ID {
		case bench.PeerTardisBooks:
			for _, r := range p.Runs {
				if r.Workload == w.ID && w.Rows != 0 && r.Rows != w.Rows {
					return fmt.Errorf("round %d, %s: %d book snapshots, but an earlier round computed %d", r.Round, w.ID, r.Rows, w.Rows)
				}
				if r.Workload == w.ID {
					w.Rows = r.Rows
				}
			}
		case bench.PeerTapedeckDepth:
			fmt.Fprintf(opts.Stderr, "bench-peers: counting %s's rows (one more pass, untimed)… ", w.ID)
			if w.Rows, err = countCSVRows(replay, dataset, e.root); err != nil {
				fmt.Fprintln(opts.Stderr)
				return err
			}
			fmt.Fprintf(opts.Stderr, "%d\n", w.Rows)
		}
	}
	p.Finished = time.Now().UTC().Format(time.RFC3339)
	p.Finish()
	if err := p.Validate(); err != nil {
		return fmt.Errorf("the result is inconsistent (a bug here): %w", err)
	}
	var buf bytes.Buffer
	if err := bench.WritePeersResult(&buf, p); err != nil {
		return err
	}
	out := e.abs(opts.JSON)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stderr, "bench-peers: wrote %s\n", e.rel(out))
	fmt.Fprint(opts.Stdout, bench.PeersResultsSection(p, e.rel(out)))
	if !opts.Publish {
		return nil
	}
	if err := os.WriteFile(filepath.Join(e.root, bench.PeersFile), buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stderr, "bench-peers: wrote %s\n", bench.PeersFile)
	return publishPeers(e, p, bench.PeersFile, filepath.Join(e.root, "bench/RESULTS.md"), filepath.Join(e.root, "README.md"), false, opts.Stderr)
}

// countCSVRows runs the depth export once more into a pipe and counts its
// rows (lines after the header).
func countCSVRows(replay, dataset, dir string) (int64, error) {
	cmd := exec.Command(replay, "export", dataset, "--table", "depth", "--levels", "25", "--every-event", "--format", "csv", "--out", "-")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var lines int64
	buf := make([]byte, 1<<20)
	for {
		n, rerr := out.Read(buf)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			cmd.Wait()
			return 0, rerr
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("the depth export's row count: %v\n%s", err, tail(stderr.String(), 20))
	}
	if lines < 1 {
		return 0, fmt.Errorf("the depth export wrote no header")
	}
	return lines - 1, nil
}

// binaryGoVersion is the Go toolchain that built the binary at path.
func binaryGoVersion(e *env, path string) (string, error) {
	out, err := exec.Command(e.goTool, "version", path).Output()
	if err != nil {
		return "", fmt.Errorf("go version %s: %w (scripts/bench-peers.sh builds it)", path, err)
	}
	// "path: go1.26.8"
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", fmt.Errorf("go version %s: no output", path)
	}
	return f[len(f)-1], nil
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
