// Package cli holds what the tapedeck commands share: exit codes, the mapping
// of errors to them, and terminal detection for progress output.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
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

// FlagError is a usage error: a bad flag, argument or combination (ExitUsage).
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

// NewRoot returns the root command of a binary with its verbs: --version
// prints the module version and VCS revision from the build info. Each
// binary's main.go lists its verbs in one call, the one place they are
// registered.
func NewRoot(name, short string, verbs ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:     name,
		Short:   short,
		Version: Version(),
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(verbs...)
	return root
}

// Version describes the running binary from its build info: the main
// module's version ("(devel)" for a plain go build), the VCS revision it was
// built from with "+dirty" when the tree had changes, and the Go version.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		rev = "unknown"
	} else if dirty {
		rev += "+dirty"
	}
	out := v + " (revision " + rev
	if at != "" {
		out += ", " + at
	}
	return out + ", " + bi.GoVersion + ")"
}

// Main executes root with args and returns the process exit code. Every
// error is printed as one line on stderr, never with the usage text: a usage
// error (bad flag, argument or combination: ExitUsage) ends with a pointer to
// the verb's --help. A closed stdout pipe (`replay export -o - | head`) is not
// an error: SIGPIPE is ignored so the write fails with EPIPE, and the command
// ends quietly with ExitOK. SIGINT and SIGTERM stop a verb as OnSignal says:
// one line ("replay: interrupted by SIGINT") and exit 130 or 143.
func Main(root *cobra.Command, args []string, stderr io.Writer) int {
	signal.Ignore(syscall.SIGPIPE)
	root.SetArgs(args)
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &FlagError{Err: err} })
	usageArgs(root)
	ctx, interrupted, stop := interrupts(root, args, stderr)
	defer stop()
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if s := interrupted(); s != nil {
		fmt.Fprintf(stderr, "%s: %s\n", root.Name(), interruptedMessage(s, err))
		return SignalExitCode(s)
	}
	if errors.Is(err, syscall.EPIPE) {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	msg := oneLine(err.Error())
	var fe *FlagError
	if errors.As(err, &fe) || strings.HasPrefix(msg, "unknown command ") {
		fmt.Fprintf(stderr, "%s: %s (see '%s --help')\n", root.Name(), msg, cmd.CommandPath())
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %s\n", root.Name(), msg)
	var pe *ProblemError
	if errors.As(err, &pe) {
		return ExitProblem
	}
	return ExitError
}

// usageArgs makes every positional-argument check of the tree return a
// FlagError, so cobra's own checks (cobra.NoArgs, …) exit 2 like ours.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var fe *FlagError
			if err != nil && !errors.As(err, &fe) {
				err = &FlagError{Err: err}
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// oneLine joins a multi-line message (errors.Join) into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "; ")
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

// ExactArgs is a cobra Args check: the verb needs exactly the positional
// arguments named by what, in order.
func ExactArgs(what ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(what) {
			return FlagErrorf("%s: want %s (%d arguments), got %d", cmd.Name(), strings.Join(what, " "), len(what), len(args))
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
