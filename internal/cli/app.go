package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/collsim/collsim/scenarios"
	"github.com/urfave/cli/v2"
)

// Version is the collsim version printed by --version and in reports.
const Version = "0.1.0"

// Exit codes.
const (
	ExitOK       = 0
	ExitFailed   = 1 // a check ran and did not pass
	ExitBadInput = 2 // usage error, unreadable or invalid input
	// ExitInterrupted is the shell's code for a process ended by SIGINT
	// (128 + 2): collsim returns it when the run was interrupted.
	ExitInterrupted = 130
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

// interruptedf is the error of a run stopped by an interrupt; the message
// says what finished ("predict: interrupted after 3 of 31 sizes").
func interruptedf(format string, a ...any) error {
	return &exitError{code: ExitInterrupted, err: fmt.Errorf(format, a...)}
}

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
	// isTerminal says whether w is a terminal a person watches; progress
	// lines go to stderr only then. Nil means never (tests inject it).
	isTerminal func(w io.Writer) bool
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
	return runWith(ctx, &env{stdout: stdout, stderr: stderr, args: args, now: time.Now, isTerminal: isTerminal}, args)
}

// runWith is Main with the environment given: tests call it with a fixed clock.
func runWith(ctx context.Context, e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	app := &cli.App{
		Name:                 "collsim",
		Usage:                "simulate, calibrate and validate GPU collective communication (NCCL) performance",
		UsageText:            "collsim COMMAND [options] [FILE...]\ncollsim help [COMMAND]   what a command does and its options\ncollsim version          the version",
		Version:              Version,
		Writer:               stdout,
		ErrWriter:            stderr,
		Commands:             commands(e),
		EnableBashCompletion: false,
		HideHelpCommand:      true,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError:         usageError,
		// A repeatable option takes each value whole: NCCL values hold
		// commas (NCCL_IB_HCA==mlx5_0,mlx5_1), and so may file names.
		DisableSliceFlagSeparator: true,
	}
	for _, c := range app.Commands {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
	}
	args, err := builtins(app, args)
	if err == nil && args != nil {
		err = app.RunContext(ctx, interspersed(app.Commands, args))
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	isExit := errors.As(err, &ee)
	if errors.Is(err, context.Canceled) && (!isExit || ee.code != ExitInterrupted) {
		// Interrupted where no command said what finished: say what it
		// was doing, whatever code the command gave the error.
		msg := strings.ReplaceAll(err.Error(), context.Canceled.Error(), "interrupted")
		if len(args) > 1 && !strings.HasPrefix(msg, args[1]+":") {
			msg = args[1] + ": " + msg
		}
		err = interruptedf("%s", msg)
	}
	cmd := ""
	if len(args) > 1 {
		cmd = args[1]
	}
	fmt.Fprintf(stderr, "collsim: %s\n", userMessage(cmd, err.Error()))
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors urfave/cli raises itself (unknown flag, bad flag value, unknown
	// command) are usage errors.
	return ExitBadInput
}

// builtins handles what is not a command of its own: `collsim help
// [COMMAND]` and `collsim version`, and refuses a command collsim does not
// have. It returns the arguments to run, nil when it did all there was to do.
func builtins(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	known := func(name string) bool {
		for _, c := range app.Commands {
			if c.HasName(name) {
				return true
			}
		}
		return false
	}
	switch name := args[1]; {
	case name == "version":
		if len(args) > 2 {
			return nil, badInputf("version takes no arguments")
		}
		_, err := fmt.Fprintf(app.Writer, "%s version %s\n", app.Name, app.Version)
		return nil, err
	case name == "help":
		switch {
		case len(args) == 2:
			return []string{args[0], "--help"}, nil
		case len(args) > 3:
			return nil, badInputf("help takes one command name, got %d: %s", len(args)-2, strings.Join(args[2:], " "))
		case !known(args[2]):
			return nil, unknownCommand(app, args[2])
		}
		return []string{args[0], args[2], "--help"}, nil
	case strings.HasPrefix(name, "-") || known(name):
		return args, nil
	default:
		return nil, unknownCommand(app, name)
	}
}

// unknownCommand is the error for a command collsim does not have.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return badInputf("unknown command '%s' (commands: %s, help, version)", name, strings.Join(names, ", "))
}

// invalidValue matches the flag package's message for a value it cannot parse.
var invalidValue = regexp.MustCompile(`^invalid value (".*") for flag (-\S+): (.*)$`)

// usageError is every command's answer to flags it cannot parse: one line
// naming the command and the flag, and where to read about it, instead of
// the whole help text.
func usageError(c *cli.Context, err error, _ bool) error {
	dashes := func(f string) string {
		f = strings.TrimLeft(f, "-")
		if len(f) > 1 {
			return "--" + f
		}
		return "-" + f
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		msg = "unknown flag " + dashes(f)
	} else if f, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = dashes(f) + " needs a value"
	} else if m := invalidValue.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s: invalid value %s (%s)", dashes(m[2]), m[1], m[3])
	}
	if c == nil || c.Command == nil || c.Command.Name == "" || c.Command.Name == c.App.Name {
		return badInputf("%s (see collsim help)", msg)
	}
	name := c.Command.Name
	return badInputf("%s: %s (see collsim help %s)", name, msg, name)
}

// packagePrefixes are the names collsim's packages put in front of their
// errors; the user knows commands, not packages, so userMessage drops them.
var packagePrefixes = map[string]bool{
	"calibrate": true, "accuracy": true, "scenarios": true, "ingest": true, "sim": true, "model": true,
	"reports": true, "hwbench": true, "study": true, "atomicfile": true,
}

var (
	yamlListRE    = regexp.MustCompile(`(?:yaml: )?unmarshal errors:\s*\n\s*line (\d+): ([^\n]*)(?:\n.*)*`)
	yamlSyntaxRE  = regexp.MustCompile(`: yaml: [^\n]*`)
	yamlUnmarshal = regexp.MustCompile("cannot unmarshal (!!\\w+)(?: `([^`]*)`)? into (\\S+)")
	yamlNotFound  = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlAlready   = regexp.MustCompile(`mapping key "([^"]*)" already defined at line (\d+)`)
	flagValueRE   = regexp.MustCompile(`invalid value "([^"]*)" for flag --?([\w-]+): parse error`)
	flagUnknownRE = regexp.MustCompile(`flag provided but not defined: --?([\w-]+)`)
)

// userMessage is an error as the user reads it, on one line: the YAML
// library's words and Go type names replaced by the file's terms
// ("FILE:3: want a mapping, got a list"), package names dropped where a
// package prefixed its error ("calibrate: calibrate: open" becomes
// "calibrate: open"), a segment repeated back to back said once.
//
// cmd is the command that ran: a leading segment that names it stays.
func userMessage(cmd, msg string) string {
	msg = strings.TrimSpace(msg)
	// "FILE: yaml: unmarshal errors:\n  line 3: X\n  line 5: Y" -> "FILE:3: X"
	if m := yamlListRE.FindStringSubmatchIndex(msg); m != nil {
		line, first := msg[m[2]:m[3]], msg[m[4]:m[5]]
		head := strings.TrimSuffix(strings.TrimRight(msg[:m[0]], " "), ":")
		msg = head + ":" + line + ": " + first + msg[m[1]:]
	}
	// "FILE: yaml: line 2: did not find expected key" -> "FILE:3: invalid
	// YAML: ..." (the line counted from 1, scenarios.SplitSyntaxError)
	msg = yamlSyntaxRE.ReplaceAllStringFunc(msg, func(s string) string {
		line, problem := scenarios.SplitSyntaxError(strings.TrimPrefix(s, ": "))
		if line > 0 {
			return fmt.Sprintf(":%d: invalid YAML: %s", line, problem)
		}
		return ": invalid YAML: " + problem
	})
	msg = yamlUnmarshal.ReplaceAllStringFunc(msg, func(s string) string {
		m := yamlUnmarshal.FindStringSubmatch(s)
		got := scenarios.TagWords(m[1])
		if m[2] != "" {
			got += fmt.Sprintf(" %q", m[2])
		}
		return "want " + scenarios.TypeWords(m[3], nil) + ", got " + got
	})
	msg = yamlNotFound.ReplaceAllString(msg, `unknown key "$1"`)
	// The flag package's words, from option sets parsed inside a command
	// (compare's --design ARGS).
	msg = flagValueRE.ReplaceAllString(msg, `--$2: invalid value "$1"`)
	msg = flagUnknownRE.ReplaceAllString(msg, `unknown flag --$1`)
	msg = yamlAlready.ReplaceAllString(msg, `duplicate key "$1" (first given at line $2)`)
	parts := strings.Split(msg, ": ")
	out := parts[:0]
	for i, p := range parts {
		if packagePrefixes[p] && i < len(parts)-1 {
			// Keep the command's name at the front (collsim calibrate ...).
			if i == 0 && p == cmd {
				out = append(out, p)
			}
			continue
		}
		if len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	msg = strings.Join(out, ": ")
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}
