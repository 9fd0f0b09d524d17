package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Env describes the machine and toolchain a report was measured with. Two
// reports are comparable only when their Fingerprints are equal.
type Env struct {
	CPU       string `json:"cpu"`   // model name, as /proc/cpuinfo says
	Cores     int    `json:"cores"` // logical CPUs
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
	// GOMAXPROCS, MemTotalKB and LoadAvg (1, 5 and 15 minutes, when the
	// report was made: how busy the machine was) are informative and not
	// part of the fingerprint.
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemTotalKB int64  `json:"mem_total_kb,omitempty"`
	LoadAvg    string `json:"load_avg,omitempty"`
	// Fingerprint is the SHA-256 of CPU, Cores, GOOS, GOARCH and GoVersion.
	Fingerprint string `json:"fingerprint"`
}

// CurrentEnv describes this machine and the Go toolchain this program was
// built with.
func CurrentEnv() Env {
	e := Env{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		MemTotalKB: memTotalKB(),
		LoadAvg:    loadAvg(),
	}
	e.Fingerprint = e.fingerprint()
	return e
}

func (e Env) fingerprint() string {
	h := sha256.Sum256([]byte(fmt.Sprintf("cpu=%s\ncores=%d\ngoos=%s\ngoarch=%s\ngo=%s\n",
		e.CPU, e.Cores, e.GOOS, e.GOARCH, e.GoVersion)))
	return hex.EncodeToString(h[:])
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		return v
	}
	return "unknown"
}

func memTotalKB() int64 {
	var kb int64
	fmt.Sscanf(procField("/proc/meminfo", "MemTotal"), "%d", &kb)
	return kb
}

// loadAvg returns the first three fields of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value after "key:" on the first matching line of a
// /proc file, trimmed, or "".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Commit returns the git HEAD of the repository at dir, with "+dirty" when
// tracked files differ from it, or "" when git cannot say. It only reads.
func Commit(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}
