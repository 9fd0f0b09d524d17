package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tapedeck/tapedeck/bench"
	"github.com/tapedeck/tapedeck/internal/cli"
)

// suiteFlags are the flags every verb that runs the suite shares.
type suiteFlags struct {
	Bench     string // -test.bench regexp
	Benchtime string // -test.benchtime
	Frames    int64  // TAPEDECK_BENCH_FRAMES; 0 = the suite's default
	OutDir    string // where reports, raw output and binaries go
	Timeout   time.Duration
	Tags      string // build tags of the binary under test
}

func (f *suiteFlags) register(cmd *cobra.Command, bench string) {
	cmd.Flags().StringVar(&f.Bench, "bench", bench, "regexp of the scenarios to run (go test -bench)")
	cmd.Flags().StringVar(&f.Benchtime, "benchtime", "200ms", "time or iterations per run (go test -benchtime)")
	cmd.Flags().Int64Var(&f.Frames, "frames", 0, "frames of the generated inputs (default 100000; 1000000+ for big runs)")
	cmd.Flags().StringVar(&f.OutDir, "out", "bench/out", "directory for reports, raw output and test binaries")
	cmd.Flags().DurationVar(&f.Timeout, "timeout", 2*time.Hour, "limit for one run of the suite")
	cmd.Flags().StringVar(&f.Tags, "tags", "", "build tags for the binary under test (benchslow: a deliberately slowed build)")
}

func (f *suiteFlags) validate() error {
	if v := os.Getenv(bench.EnvFrames); f.Frames == 0 && v != "" {
		// The suite would read it: make it explicit, so that the report's
		// suite fingerprint covers the inputs actually used.
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cli.FlagErrorf("%s=%q: want an integer", bench.EnvFrames, v)
		}
		f.Frames = n
	}
	if f.Frames != 0 && f.Frames < 1000 {
		return cli.FlagErrorf("--frames %d: want 0 (default) or at least 1000", f.Frames)
	}
	if f.Bench == "" {
		return cli.FlagErrorf("--bench must not be empty")
	}
	return nil
}

// env is what a run needs to know about where it is.
type env struct {
	root   string // module root
	goTool string
	stderr io.Writer
	tty    bool
}

func newEnv(stderr io.Writer) (*env, error) {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("find the module: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return nil, fmt.Errorf("find the module: not inside a Go module (run from the tapedeck repository)")
	}
	return &env{root: filepath.Dir(mod), goTool: goTool, stderr: stderr, tty: cli.IsTerminal(stderr)}, nil
}

func (e *env) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.root, p)
}

// build compiles the suite into a test binary at path.
func (e *env) build(path, tags string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("build suite: %w", err)
	}
	cmd := exec.Command(e.goTool, "test", "-c", "-tags="+tags, "-o", path, "./bench")
	cmd.Dir = e.root
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build suite: %w\n%s", err, stderr.Bytes())
	}
	return nil
}

// run executes a suite binary once with count runs per scenario, appending
// its raw output to raw, and returns the parsed samples. On a terminal it
// echoes each result line to stderr as progress.
func (e *env) run(bin string, f *suiteFlags, count int, raw io.Writer) (map[string]map[string][]float64, error) {
	args := []string{"-test.run=^$", "-test.bench=" + f.Bench, "-test.benchtime=" + f.Benchtime,
		fmt.Sprintf("-test.count=%d", count), "-test.benchmem", "-test.timeout=" + f.Timeout.String()}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(e.root, "bench") // testdata paths are relative to the package
	cmd.Env = os.Environ()
	if f.Frames > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", bench.EnvFrames, f.Frames))
	}
	var out bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run suite: %w", err)
	}
	echoed := make(chan struct{})
	go func() {
		defer close(echoed)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			if raw != nil {
				fmt.Fprintln(raw, line)
			}
			if e.tty && strings.HasPrefix(line, "Benchmark") {
				fmt.Fprintln(e.stderr, line)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-echoed
	if err != nil {
		return nil, fmt.Errorf("run suite %s: %w\n%s", filepath.Base(bin), err, tail(out.String(), 40))
	}
	return bench.ParseOutput(&out)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// newReport wraps samples with this machine's facts and the suite's
// fingerprint.
func (e *env) newReport(samples map[string]map[string][]float64, f *suiteFlags, count int) (*bench.Report, error) {
	r := bench.NewReport(samples)
	r.Env = bench.CurrentEnv()
	r.Commit = bench.Commit(e.root)
	r.Count = count
	r.Benchtime = f.Benchtime
	suite, err := suiteFingerprint(e.root, f.Frames)
	if err != nil {
		return nil, err
	}
	r.Suite = suite
	return r, nil
}

// measure builds the suite into OUT/name.test, runs it count times with its
// raw go test output in OUT/rawName, and returns the report and the binary.
func (e *env) measure(f *suiteFlags, count int, name, rawName string) (*bench.Report, string, error) {
	out := e.abs(f.OutDir)
	bin := filepath.Join(out, name+".test")
	if err := e.build(bin, f.Tags); err != nil {
		return nil, "", err
	}
	raw, err := os.Create(filepath.Join(out, rawName))
	if err != nil {
		return nil, "", err
	}
	defer raw.Close()
	samples, err := e.run(bin, f, count, raw)
	if err != nil {
		return nil, "", err
	}
	r, err := e.newReport(samples, f, count)
	return r, bin, err
}
