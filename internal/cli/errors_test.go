package cli

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// TestBadInputKeepsTheCause: a bad option value is a bad-input error (exit
// 2) whose message is the option and the parser's own message, and which
// still wraps the parser's error, so callers can inspect the cause.
func TestBadInputKeepsTheCause(t *testing.T) {
	tests := []struct {
		flag, value string
		parse       func(string) error
	}{
		{"collective", "allscatter", func(s string) error { _, err := model.ParseCollective(s); return err }},
		{"engine", "quantum", func(s string) error { _, err := sim.ParseEngine(s); return err }},
		{"algo", "butterfly", func(s string) error { _, err := model.ParseAlgo(s); return err }},
		{"proto", "ll256", func(s string) error { _, err := model.ParseProto(s); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			fs := flag.NewFlagSet("predict", flag.ContinueOnError)
			args := map[string]string{"collective": "all_reduce", "datatype": "float", "engine": "analytic", "algo": "", "proto": ""}
			args[tc.flag] = tc.value
			for name, v := range args {
				fs.String(name, v, "")
			}
			_, err := requestBase(cli.NewContext(cli.NewApp(), fs, nil))
			cause := tc.parse(tc.value)
			if err == nil || cause == nil {
				t.Fatalf("requestBase accepted --%s %s (cause %v)", tc.flag, tc.value, cause)
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitBadInput {
				t.Fatalf("error %v is not a bad-input error", err)
			}
			if want := "--" + tc.flag + ": " + cause.Error(); err.Error() != want {
				t.Errorf("message %q, want %q", err.Error(), want)
			}
			inner := errors.Unwrap(ee.err)
			if inner == nil || inner.Error() != cause.Error() {
				t.Errorf("the cause is not wrapped: Unwrap gives %v", inner)
			}
			if strings.Count(err.Error(), cause.Error()) != 1 {
				t.Errorf("message %q repeats the cause", err.Error())
			}
		})
	}
}
