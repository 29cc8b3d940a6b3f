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

// TestUserMessage: errors lose the YAML library's words, Go type names and
// package prefixes, and stay on one line.
func TestUserMessage(t *testing.T) {
	tests := []struct{ cmd, in, want string }{
		{"calibrate", "calibrate: calibrate: open x.txt: no such file or directory", "calibrate: open x.txt: no such file or directory"},
		{"predict", "calibrate: p.yaml: yaml: unmarshal errors:\n  line 3: cannot unmarshal !!map into []calibrate.Param\n  line 7: field x not found in type calibrate.Profile", "p.yaml:3: want a list, got a mapping"},
		{"accuracy", "calibrate: c.yaml: yaml: unmarshal errors:\n  line 3: field foo not found in type accuracy.Case", `c.yaml:3: unknown key "foo"`},
		{"predict", "calibrate: p.yaml: yaml: line 2: mapping values are not allowed in this context", "p.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		// The library counts its parser's lines from 0 and omits line 0.
		{"predict", "calibrate: p.yaml: yaml: line 2: did not find expected key", "p.yaml:3: invalid YAML: did not find expected key"},
		{"accuracy", "calibrate: c.yaml: yaml: did not find expected '-' indicator", "c.yaml:1: invalid YAML: did not find expected '-' indicator"},
		{"accuracy", "calibrate: c.yaml: yaml: unknown anchor 'x' referenced", "c.yaml: invalid YAML: unknown anchor 'x' referenced"},
		{"predict", "c.yaml:3:3: cannot unmarshal !!seq into model.NICSpec", "c.yaml:3:3: want a mapping, got a list"},
		{"predict", "c.yaml:3:3: cannot unmarshal !!str `abc` into int", `c.yaml:3:3: want an integer, got text "abc"`},
		{"predict", "predict: --report: reports: writing r.html: disk full", "predict: --report: writing r.html: disk full"},
		{"predict", "size 8B: sim: no NIC for the hop a -> b", "size 8B: no NIC for the hop a -> b"},
		{"hwbench", "hwbench: hwbench: nccl probe failed", "hwbench: nccl probe failed"},
		{"predict", "first line\nsecond line", "first line; second line"},
		{"compare", `compare: design "a": invalid value "zero" for flag -nodes: parse error (ARGS are ...)`, `compare: design "a": --nodes: invalid value "zero" (ARGS are ...)`},
		{"compare", `compare: design "a": flag provided but not defined: -frob`, `compare: design "a": unknown flag --frob`},
	}
	for _, tc := range tests {
		if got := userMessage(tc.cmd, tc.in); got != tc.want {
			t.Errorf("userMessage(%q, %q)\n = %q\nwant %q", tc.cmd, tc.in, got, tc.want)
		}
	}
}
