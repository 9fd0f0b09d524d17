//go:build unix

package bench

import (
	"runtime"
	"syscall"
)

// PeakRSS returns the process's peak resident set size in bytes, or 0 when
// the system does not say.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes there
	}
	return int64(ru.Maxrss) * 1024 // KiB elsewhere
}

// CPUTime returns the process's user plus system CPU time in ns, or 0 when
// the system does not say.
func CPUTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
