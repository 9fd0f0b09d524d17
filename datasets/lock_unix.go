//go:build unix

package datasets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes the dataset's writer lock: an exclusive flock on dir/.lock.
// The kernel drops it when the holder exits, so a writer killed with
// SIGKILL never leaves a dataset locked.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("datasets: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("datasets: lock: %w", err)
	}
	return f, nil
}

// unlockDir removes the lock file, then releases the lock: whoever opens the
// name next creates a fresh file, after every write of this holder.
func unlockDir(f *os.File) {
	if f == nil {
		return
	}
	_ = os.Remove(f.Name())
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
