package cli

import (
	"strings"
	"testing"
)

// TestHelpAndVersion: help, help COMMAND, version and --version answer on
// stdout with exit 0; a command or help topic collsim does not have is a
// usage error that lists the commands.
func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{[]string{"help"}, 0, "COMMANDS:", ""},
		{[]string{}, 0, "COMMANDS:", ""},
		{[]string{"help", "predict"}, 0, "collsim predict - predict", ""},
		{[]string{"help", "calibrate"}, 0, "collsim calibrate", ""},
		{[]string{"predict", "--help"}, 0, "collsim predict - predict", ""},
		{[]string{"version"}, 0, "collsim version " + Version, ""},
		{[]string{"--version"}, 0, "collsim version " + Version, ""},
		{[]string{"frobnicate"}, 2, "", "unknown command 'frobnicate' (commands: predict, topo,"},
		{[]string{"help", "frobnicate"}, 2, "", "unknown command 'frobnicate'"},
		{[]string{"help", "predict", "topo"}, 2, "", "help takes one command name"},
		{[]string{"version", "2"}, 2, "", "version takes no arguments"},
		{[]string{"predict", "--frob"}, 2, "", "predict: unknown flag --frob (see collsim help predict)"},
		{[]string{"predict", "-b"}, 2, "", "predict: -b needs a value"},
		{[]string{"predict", "--nodes", "x"}, 2, "", `predict: --nodes: invalid value "x"`},
		{[]string{"-x"}, 2, "", "unknown flag -x (see collsim help)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errs)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
			if !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q lacks %q", errs, tc.err)
			}
			if tc.code != 0 {
				if n := strings.Count(strings.TrimSpace(errs), "\n"); n != 0 {
					t.Errorf("stderr has %d lines, want 1: %q", n+1, errs)
				}
				if out != "" {
					t.Errorf("an error printed to stdout: %q", out)
				}
			}
		})
	}
}
