package s3store

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// cutError is a response whose body ended before its length: the
// connection dropped, not a short object.
type cutError struct{ msg string }

func (e *cutError) Error() string { return e.msg }

// transient reports whether err is a fault of the transfer that another
// try may not meet: a body that stalled, was cut short or damaged, a
// connection reset. (A request that got no answer, or an answer of 5xx, was already
// retried by the client, Attempts times.)
func transient(err error) bool {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Phase != phaseWait
	}
	var ce *cutError
	var de *DamagedError
	return errors.As(err, &ce) || errors.As(err, &de) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// retry runs op until it succeeds, fails with an error that is not
// transient, or has been tried Attempts times, waiting a little longer
// before each new try. The last error says how many tries were made.
func (s *Store) retry(ctx context.Context, op func() error) error {
	tries := s.cfg.Attempts
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		err := op()
		if err == nil || !transient(err) {
			return err
		}
		if try >= tries {
			if tries > 1 {
				err = fmt.Errorf("%w (tried %d times)", err, tries)
			}
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait *= 2
	}
}
