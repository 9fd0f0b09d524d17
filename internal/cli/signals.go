package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// How a verb meets SIGINT (Ctrl-C) and SIGTERM, set with OnSignal. Main
// prints one line, "NAME: interrupted by SIGINT", and exits 128 + the
// signal's number (130, 143), except for SignalOwn verbs.
const (
	// SignalExit (the default): the verb has nothing to clean up, so the
	// process exits at once.
	SignalExit = "exit"
	// SignalCancel: the command's context is cancelled and the verb stops
	// by itself, removing what it had not finished (an export's temporary
	// files); a second signal exits at once.
	SignalCancel = "cancel"
	// SignalOwn: the verb handles the signals itself as its normal end
	// (a capture or a server shutting down) and its exit status stands.
	SignalOwn = "own"
)

// signalAnnotation is the cobra annotation key OnSignal sets.
const signalAnnotation = "tapedeck.signal"

// OnSignal sets how cmd meets SIGINT and SIGTERM (SignalExit, SignalCancel
// or SignalOwn) and returns cmd.
func OnSignal(cmd *cobra.Command, how string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[signalAnnotation] = how
	return cmd
}

// exit ends the process; a variable so that tests can watch it.
var exit = os.Exit

// interrupts watches SIGINT and SIGTERM for the verb args name, as OnSignal
// set it. It returns the context to run the verb with, the signal received
// (nil if none) and a stop function.
func interrupts(root *cobra.Command, args []string, stderr io.Writer) (context.Context, func() os.Signal, func()) {
	how := SignalExit
	if cmd, _, err := root.Find(args); err == nil && cmd != nil && cmd.Annotations[signalAnnotation] != "" {
		how = cmd.Annotations[signalAnnotation]
	}
	// The caller's context (root.SetContext: a test, a program embedding
	// the CLI) still stops the verb; signals only add to it.
	parent := root.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	if how == SignalOwn {
		return ctx, func() os.Signal { return nil }, cancel
	}
	var (
		mu  sync.Mutex
		got os.Signal
	)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				mu.Lock()
				again := got != nil
				got = s
				mu.Unlock()
				if again || how == SignalExit {
					fmt.Fprintf(stderr, "%s: %s\n", root.Name(), interruptedBy(s))
					exit(SignalExitCode(s))
					return
				}
				cancel()
			case <-done:
				return
			}
		}
	}()
	return ctx, func() os.Signal {
			mu.Lock()
			defer mu.Unlock()
			return got
		}, func() {
			signal.Stop(ch)
			close(done)
			cancel()
		}
}

// SignalExitCode is the exit status of a command stopped by s: 128 + its
// number, as a shell reports a process killed by it (SIGINT 130, SIGTERM 143).
func SignalExitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return ExitError
}

func interruptedBy(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by " + s.String()
}

// interruptedMessage is the one line of a verb that stopped on signal s
// with err: the signal, then err unless it only says the context ended.
func interruptedMessage(s os.Signal, err error) string {
	if errors.Is(err, context.Canceled) {
		return interruptedBy(s)
	}
	return interruptedBy(s) + ": " + oneLine(err.Error())
}
