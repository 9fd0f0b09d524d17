// Package cli holds what the tapedeck commands share: exit codes, the mapping
// of errors to them, and terminal detection for progress output.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes of every tapedeck command.
const (
	ExitOK      = 0
	ExitError   = 1 // the command failed
	ExitUsage   = 2 // bad flags or arguments
	ExitProblem = 3 // the command ran and found a problem (verify, bench-gate)
)

// FlagError is a usage error; the command prints its usage with it.
type FlagError struct{ Err error }

// Error returns the message: what failed and where.
func (e *FlagError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf returns a FlagError with a formatted message.
func FlagErrorf(format string, a ...any) error {
	return &FlagError{Err: fmt.Errorf(format, a...)}
}

// ProblemError means the command completed and found a problem to report
// through the exit status (ExitProblem), e.g. a verify failure.
type ProblemError struct{ Err error }

// Error returns the message: what failed and where.
func (e *ProblemError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *ProblemError) Unwrap() error { return e.Err }

// Registry collects the verbs of one command; each verb file registers itself
// from an init function.
type Registry struct{ ctors []func() *cobra.Command }

// Add registers a verb constructor.
func (r *Registry) Add(f func() *cobra.Command) { r.ctors = append(r.ctors, f) }

// Attach adds every registered verb to root.
func (r *Registry) Attach(root *cobra.Command) {
	for _, f := range r.ctors {
		root.AddCommand(f())
	}
}

// Main executes root with args and returns the process exit code, printing
// errors to stderr. A closed stdout pipe is not an error.
func Main(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &FlagError{Err: err} })
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, syscall.EPIPE) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	var fe *FlagError
	if errors.As(err, &fe) {
		if cmd != nil {
			fmt.Fprintln(stderr)
			fmt.Fprint(stderr, cmd.UsageString())
		}
		return ExitUsage
	}
	var pe *ProblemError
	if errors.As(err, &pe) {
		return ExitProblem
	}
	return ExitError
}

// IsTerminal reports whether w is a terminal (progress bars and tables only then).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// OutputFormat resolves a verb's --format (and optional --json shorthand) to
// "json" or "table": a table on a terminal and JSON when piped unless the
// user chose. Contradicting or unknown choices are usage errors.
func OutputFormat(format string, asJSON bool, out io.Writer) (string, error) {
	if asJSON {
		if format != "" && format != "json" {
			return "", FlagErrorf("--json and --format %s contradict each other", format)
		}
		return "json", nil
	}
	switch format {
	case "":
		if IsTerminal(out) {
			return "table", nil
		}
		return "json", nil
	case "json", "table":
		return format, nil
	}
	return "", FlagErrorf("--format %q: want json or table", format)
}

// AtLeastOne is a cobra Args check: the verb needs one or more positional
// arguments, named by what ("DATASET", "FILE"); none is a usage error.
func AtLeastOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return FlagErrorf("%s: at least one %s is required", cmd.Name(), what)
		}
		return nil
	}
}

// ExactlyOne is a cobra Args check: the verb needs exactly one positional
// argument, named by what.
func ExactlyOne(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return FlagErrorf("%s: exactly one %s is required", cmd.Name(), what)
		}
		return nil
	}
}
