//go:build !unix

package bench

import "os"

// PeakRSS returns 0: this system offers no portable peak RSS.
func PeakRSS() int64 { return 0 }

// CPUTime returns 0: this system offers no portable process CPU time.
func CPUTime() int64 { return 0 }

// ChildMaxRSS returns 0: this system offers no portable peak RSS.
func ChildMaxRSS(*os.ProcessState) int64 { return 0 }
