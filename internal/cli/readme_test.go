package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository's root seen from this package's directory.
const repoRoot = "../.."

// readmeCommand is one `collsim ...` command of a README code block.
type readmeCommand struct {
	line int
	text string
	args []string
	// stdout is the file the README redirects the output to ("" none).
	stdout string
}

// readmeCommands extracts every collsim command from the sh code blocks of
// the README: continuation lines joined, comments dropped.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeCommand
	inSh := false
	var pending string
	pendingLine := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			inSh = !inSh && strings.TrimPrefix(l, "```") == "sh"
			continue
		}
		if !inSh {
			continue
		}
		if pending == "" {
			pendingLine = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " "), "\\"); ok {
			pending += s + " "
			continue
		}
		text := strings.TrimSpace(pending + l)
		pending = ""
		for _, it := range loopIterations(text) {
			words := shellWords(t, it.text)
			if len(words) == 0 {
				continue
			}
			switch words[0] {
			case "collsim", "./collsim":
				out = append(out, readmeCommand{line: pendingLine, text: it.text, args: words[1:], stdout: it.stdout})
			}
		}
	}
	return out
}

// loopIterations expands a one-line "for i in A B ...; do CMD > OUT; done"
// loop into its commands, $i set to each value, with the file each one's
// stdout goes to; any other line is one command with stdout not
// redirected.
func loopIterations(text string) []readmeCommand {
	one := []readmeCommand{{text: text}}
	rest, ok := strings.CutPrefix(text, "for ")
	if !ok {
		return one
	}
	head, body, ok := strings.Cut(rest, "; do ")
	body, _, ok2 := strings.Cut(body, "; done")
	vars := strings.Fields(head) // i in 1 2 3
	if !ok || !ok2 || len(vars) < 3 || vars[1] != "in" {
		return one
	}
	var out []readmeCommand
	for _, v := range vars[2:] {
		cmd := strings.ReplaceAll(body, "$"+vars[0], v)
		c := readmeCommand{text: strings.TrimSpace(cmd)}
		if l, r, found := strings.Cut(cmd, ">"); found {
			c.text, c.stdout = strings.TrimSpace(l), strings.TrimSpace(r)
		}
		out = append(out, c)
	}
	return out
}

// shellWords splits a command line as sh would for the README's needs:
// words, single and double quotes, a comment from an unquoted "#".
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			return words
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Errorf("unterminated quote in README command %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// outputFlags are the options whose value is a file the command writes.
var outputFlags = map[string]bool{"-o": true, "--output": true, "--out": true, "--report": true, "--nccl-text": true}

// localize rewrites a README command to run from this package: input files
// relative to the repository's root, outputs into dir; a --profile that is
// not in the repository is one an earlier command wrote into dir. Input
// files the repository lacks are errors.
func localize(t *testing.T, c readmeCommand, dir string) []string {
	t.Helper()
	args := append([]string(nil), c.args...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if outputFlags[a] && i+1 < len(args) {
			args[i+1] = filepath.Join(dir, filepath.Base(args[i+1]))
			i++
			continue
		}
		if a == "--profile" && i+1 < len(args) {
			if _, err := os.Stat(filepath.Join(repoRoot, args[i+1])); err != nil {
				args[i+1] = filepath.Join(dir, filepath.Base(args[i+1]))
			} else {
				args[i+1] = filepath.Join(repoRoot, args[i+1])
			}
			i++
			continue
		}
		if strings.HasPrefix(a, "-") || !looksLikeFile(a) {
			continue
		}
		if strings.ContainsAny(a, "*?[") {
			// Files earlier commands of the README wrote (a loop's
			// outputs): the shell's expansion in the output directory.
			matches, _ := filepath.Glob(filepath.Join(dir, a))
			args = append(args[:i], append(matches, args[i+1:]...)...)
			i += len(matches) - 1
			continue
		}
		p := filepath.Join(repoRoot, a)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("README.md:%d: %q names %s, which is not in the repository", c.line, c.text, a)
		}
		args[i] = p
	}
	if len(args) > 0 && args[0] == "hwbench" {
		// No GPU here: the simulated machine checks the options. It holds
		// the bytes its NCCL data check moves in host memory, several
		// times the largest size per rank (gigabytes at the 1 GiB
		// default), so its sweep stops at 64 MiB.
		args = append(args, "--fake", "--quiet", "--maxbytes", "64M")
	}
	return args
}

func looksLikeFile(a string) bool {
	switch strings.ToLower(filepath.Ext(a)) {
	case ".yaml", ".yml", ".txt", ".log", ".json", ".xml", ".csv":
		return true
	}
	return false
}

// TestREADMECommandsParse: every collsim command of the README names files
// that exist and options that parse, and its inputs load: each runs with
// its context already cancelled, which stops it at its first piece of work
// (exit 130) or lets it finish; a usage error or bad input (exit 2) fails.
func TestREADMECommandsParse(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d collsim commands in README.md, want the 20 or more it has", len(cmds))
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range cmds {
		args := localize(t, c, dir)
		if strings.Contains(c.text, "--profile") && !strings.Contains(c.text, "calibrate") || strings.ContainsAny(c.text, "*?[") {
			// Needs files an earlier command writes (a calibrate profile,
			// a loop's outputs): run in full only.
			continue
		}
		var out, errb bytes.Buffer
		code := Main(ctx, append([]string{"collsim"}, args...), &out, &errb)
		if code == ExitBadInput {
			t.Errorf("README.md:%d: %s\nexit 2: %s", c.line, c.text, strings.TrimSpace(errb.String()))
		}
	}
}

// TestREADMECommandsRun runs every collsim command of the README as
// written, in order (a later one may use a file an earlier one wrote):
// exit 0, or 1 for validate and accuracy (acceptance gates: validate's
// tolerance and accuracy's targets may fail).
func TestREADMECommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's full sweeps (minutes)")
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < 20*time.Minute {
		// The DES sweeps of 16-node clusters take about ten minutes on two
		// busy cores; go test's default 10-minute timeout would kill them.
		t.Skip("needs go test -timeout 30m (the README's 16-node DES sweeps take minutes)")
	}
	dir := t.TempDir()
	for _, c := range readmeCommands(t) {
		args := localize(t, c, dir)
		var out, errb bytes.Buffer
		code := Main(context.Background(), append([]string{"collsim"}, args...), &out, &errb)
		if code != 0 && !(code == ExitFailed && (args[0] == "validate" || args[0] == "accuracy")) {
			t.Errorf("README.md:%d: %s\nexit %d: %s", c.line, c.text, code, strings.TrimSpace(errb.String()))
		}
		if c.stdout != "" {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(c.stdout)), out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
