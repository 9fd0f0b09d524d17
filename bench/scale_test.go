package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tapedeck/tapedeck/replayer"
	"github.com/tapedeck/tapedeck/replayer/export"
	"github.com/tapedeck/tapedeck/venue"
)

// envChild tells a re-executed test binary to run one scale job and report.
const envChild = "TAPEDECK_BENCH_CHILD"

// BenchmarkScale replays, and exports to Parquet, generated datasets of n/10
// and n frames (n from TAPEDECK_BENCH_FRAMES) in a child process each, so
// that peak-rss-MB is the job's own high-water mark and not the suite's:
// RSS must stay flat as the input grows 10×. cpu-s/recorded-hour is the
// child's CPU time (user + system) per hour of the recording's receive
// times, and frames/recorded-s says how busy that recording is.
func BenchmarkScale(b *testing.B) {
	n := sessionFrames(b)
	for _, job := range []string{"replay", "export"} {
		for _, frames := range []int64{n / 10, n} {
			b.Run(fmt.Sprintf("venue=polymarket/op=%s/frames=%d", job, frames), func(b *testing.B) {
				dir := datasetDir(b, venue.Polymarket, frames)
				var res childResult
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res = runChild(b, job, dir)
				}
				b.ReportMetric(float64(res.PeakRSSKB)/1024, "peak-rss-MB")
				hours := float64(res.SpanNs) / 3.6e12
				if hours > 0 {
					b.ReportMetric(float64(res.CPUNs)/1e9/hours, "cpu-s/recorded-hour")
					b.ReportMetric(float64(res.Frames)/(hours*3600), "frames/recorded-s")
				}
			})
		}
	}
}

type childResult struct {
	PeakRSSKB, CPUNs, SpanNs, Frames int64
}

func runChild(b *testing.B, job, dir string) childResult {
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+job+":"+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("scale child %s: %v\n%s", job, err, out)
	}
	var r childResult
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "scale-child ") {
			if _, err := fmt.Sscanf(line, "scale-child peak_rss_kb=%d cpu_ns=%d span_ns=%d frames=%d",
				&r.PeakRSSKB, &r.CPUNs, &r.SpanNs, &r.Frames); err != nil {
				b.Fatalf("scale child output %q: %v", line, err)
			}
			return r
		}
	}
	b.Fatalf("scale child printed no result:\n%s", out)
	return r
}

// TestScaleChild is BenchmarkScale's child: it does nothing unless the
// environment names a job.
func TestScaleChild(t *testing.T) {
	spec := os.Getenv(envChild)
	if spec == "" {
		t.Skip("run by BenchmarkScale only")
	}
	job, dir, _ := strings.Cut(spec, ":")
	r, err := replayer.New([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var closeSink func() error
	switch job {
	case "replay":
		r.Subscribe(replayer.Key{}, noop)
	case "export":
		f, err := os.Create(filepath.Join(t.TempDir(), "depth.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s, err := export.New(f, export.TableBookChanges, export.FormatParquet)
		if err != nil {
			t.Fatal(err)
		}
		r.Subscribe(replayer.Key{}, s)
		closeSink = s.Close
	default:
		t.Fatalf("unknown job %q", job)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if closeSink != nil {
		if err := closeSink(); err != nil {
			t.Fatal(err)
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	fmt.Fprintf(io.Writer(os.Stdout), "scale-child peak_rss_kb=%d cpu_ns=%d span_ns=%d frames=%d\n",
		peakRSSKB(), cpu, r.EndNs()-r.StartNs(), sum.Frames)
}

// peakRSSKB returns this process's peak resident set (VmHWM) in KiB, or 0
// where /proc is missing.
func peakRSSKB() int64 {
	var kb int64
	fmt.Sscanf(procField("/proc/self/status", "VmHWM"), "%d", &kb)
	return kb
}
