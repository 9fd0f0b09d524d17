//go:build !unix

package datasets

import "os"

// lockDir does nothing where flock is not available: Repair then relies on
// the caller to stop the writer first.
func lockDir(dir string) (*os.File, error) { return nil, nil }

func unlockDir(f *os.File) {}
