package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// badInputCase is one line of testdata/badinput/cases.txt.
type badInputCase struct {
	line       int
	name, want string
	args       []string
}

func loadBadInputCases(t *testing.T, out string) []badInputCase {
	t.Helper()
	dir := filepath.Join("testdata", "badinput")
	f, err := os.Open(filepath.Join(dir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	expand := strings.NewReplacer("$D", dir, "$OUT", out, "$RAW", filepath.Join(repoRoot, "ingest", "testdata", "raw"))
	var cases []badInputCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Split(l, "\t")
		if len(fields) != 3 {
			t.Fatalf("cases.txt:%d: want NAME<TAB>WANT<TAB>COMMAND, got %d fields", n, len(fields))
		}
		c := badInputCase{line: n, name: fields[0], want: fields[1]}
		for _, w := range shellWords(t, fields[2]) {
			c.args = append(c.args, expand.Replace(w))
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// runGuarded runs the CLI and turns a panic into an error naming it.
func runGuarded(args []string) (code int, stdout, stderr string, panicked error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"collsim"}, args...), &out, &errb)
	return code, out.String(), errb.String(), nil
}

// TestBadInputCorpus: every case of testdata/badinput/cases.txt (malformed
// YAML, truncated and foreign files, impossible topologies, absurd sizes,
// bad flags, over every command that reads files or flags) exits 2 with
// one line on stderr that says what is wrong, without a panic and without
// leaving a file behind.
func TestBadInputCorpus(t *testing.T) {
	out := t.TempDir()
	cases := loadBadInputCases(t, out)
	if len(cases) < 60 {
		t.Fatalf("%d cases, want at least 60", len(cases))
	}
	commands := map[string]bool{}
	seen := map[string]int{}
	for _, c := range cases {
		if prev, ok := seen[c.name]; ok {
			t.Errorf("cases.txt:%d: case %s already at line %d", c.line, c.name, prev)
		}
		seen[c.name] = c.line
		if len(c.args) > 0 {
			commands[c.args[0]] = true
		}
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr, panicked := runGuarded(c.args)
			if panicked != nil {
				t.Fatalf("cases.txt:%d: %v", c.line, panicked)
			}
			if code != ExitBadInput {
				t.Errorf("cases.txt:%d: exit %d, want 2; stderr %q", c.line, code, stderr)
			}
			msg := strings.TrimSuffix(stderr, "\n")
			if msg == "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "collsim: ") {
				t.Errorf("cases.txt:%d: stderr %q, want one line starting \"collsim: \"", c.line, stderr)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("cases.txt:%d: stderr %q lacks %q", c.line, msg, c.want)
			}
			for _, bad := range []string{"!!", "model.", "cannot unmarshal", " yaml: ", "calibrate: calibrate:", "goroutine"} {
				if strings.Contains(msg, bad) {
					t.Errorf("cases.txt:%d: stderr %q speaks of %q", c.line, msg, bad)
				}
			}
			_ = stdout // a refused command may have printed rows before the bad part
			entries, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("cases.txt:%d: left %s behind", c.line, e.Name())
				os.RemoveAll(filepath.Join(out, e.Name()))
			}
		})
	}
	for _, cmd := range []string{"predict", "topo", "inspect", "calibrate", "validate", "accuracy", "compare", "scale", "sweep", "hwbench"} {
		if !commands[cmd] {
			t.Errorf("no case for %s", cmd)
		}
	}
}
