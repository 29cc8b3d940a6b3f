package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Version is the collsim version printed by --version and in reports.
const Version = "0.1.0"

// Exit codes.
const (
	ExitOK       = 0
	ExitFailed   = 1 // a check ran and did not pass
	ExitBadInput = 2 // usage error, unreadable or invalid input
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// badInput marks err as the user's input being wrong (exit 2).
func badInput(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: ExitBadInput, err: err}
}

// badInputf formats a bad-input error.
func badInputf(format string, a ...any) error { return badInput(fmt.Errorf(format, a...)) }

// failed marks a check that ran and did not pass (exit 1).
func failed(err error) error { return &exitError{code: ExitFailed, err: err} }

// env is what every command gets: its output writers, the command line and
// a clock.
type env struct {
	stdout, stderr io.Writer
	// args are the arguments Main received (args[0] is the program name);
	// reports print them so a reader can rerun the command.
	args []string
	// now returns the current time; reports are dated with it. Tests fix
	// it so that reports are byte-identical from run to run. Nil means
	// time.Now.
	now func() time.Time
}

// commands lists every collsim command. Each lives in its own file.
func commands(e *env) []*cli.Command {
	return []*cli.Command{
		predictCommand(e),
		topoCommand(e),
		presetsCommand(e),
		inspectCommand(e),
		hwbenchCommand(e),
		calibrateCommand(e),
		validateCommand(e),
		accuracyCommand(e),
		compareCommand(e),
		scaleCommand(e),
		sweepCommand(e),
		mergeCommand(e),
	}
}

// interspersed moves a command's flags that follow positional arguments in
// front of them, so `collsim inspect FILE --format json` works like
// `collsim inspect --format json FILE` (urfave/cli stops parsing flags at
// the first positional argument). A "--" ends flag processing.
func interspersed(cmds []*cli.Command, args []string) []string {
	if len(args) < 3 {
		return args
	}
	var cmd *cli.Command
	for _, c := range cmds {
		if c.HasName(args[1]) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	takesValue := func(name string) (known, value bool) {
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				if n == name {
					_, isBool := f.(*cli.BoolFlag)
					return true, !isBool
				}
			}
		}
		return false, false
	}
	var flags, pos []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name := strings.TrimLeft(a, "-")
			hasEq := strings.Contains(name, "=")
			name, _, _ = strings.Cut(name, "=")
			known, value := takesValue(name)
			flags = append(flags, a)
			if known && value && !hasEq && i+1 < len(rest) {
				flags = append(flags, rest[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, pos...)
}

// Main runs collsim with args (args[0] is the program name) and returns the
// process exit code. It never panics on user input and prints one line per
// error to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, &env{stdout: stdout, stderr: stderr, args: args, now: time.Now}, args)
}

// runWith is Main with the environment given: tests call it with a fixed clock.
func runWith(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	app := &cli.App{
		Name:                 "collsim",
		Usage:                "simulate, calibrate and validate GPU collective communication (NCCL) performance",
		Version:              Version,
		Writer:               stdout,
		ErrWriter:            stderr,
		Commands:             commands(e),
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return badInput(err)
		},
	}
	err := app.RunContext(ctx, interspersed(app.Commands, args))
	if err == nil {
		return ExitOK
	}
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(stderr, "collsim: %s\n", msg)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return ExitFailed
	}
	// Errors urfave/cli raises itself (unknown flag, bad flag value, unknown
	// command) are usage errors.
	return ExitBadInput
}
