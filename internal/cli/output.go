package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/urfave/cli/v2"
)

// This file holds what the commands that print their results as a table,
// JSON or CSV (predict, compare, scale, sweep) share: the --format flag,
// its check, printing a result in the format asked for followed by the
// --report, the "# " comment lines of their tables and the JSON encoding
// every --format json uses.

// formatFlag is the --format option of the commands that print a table,
// JSON or CSV.
func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Value: "table", Usage: "table, json or csv"}
}

// outputFormat returns --format, checked to be table, json or csv (a
// usage error otherwise).
func outputFormat(c *cli.Context) (string, error) {
	format := c.String("format")
	switch format {
	case "table", "json", "csv":
		return format, nil
	}
	return "", badInputf("--format: unknown %q (known: table, json, csv)", format)
}

// result is a command's result, printable in each --format.
type result interface {
	writeTable(w io.Writer) error
	writeJSON(w io.Writer) error
	writeCSV(w io.Writer) error
}

// printResult writes res to e.stdout in format (from outputFormat) and
// then, when rpath is not empty, the document report builds to rpath;
// report is not called when printing fails or no report was asked for.
// cmd names the command in the report's write errors.
func printResult(e *env, res result, format, cmd, rpath string, report func() (*reports.Document, error)) error {
	var err error
	switch format {
	case "json":
		err = res.writeJSON(e.stdout)
	case "csv":
		err = res.writeCSV(e.stdout)
	default:
		err = res.writeTable(e.stdout)
	}
	if err != nil || rpath == "" {
		return err
	}
	doc, err := report()
	if err != nil {
		return err
	}
	return writeReport(cmd, rpath, doc)
}

// writeJSONDoc writes v to w as JSON indented by two spaces, without
// HTML escaping (so "<" and "&" stay readable), ending in a newline.
func writeJSONDoc(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeComments writes each paragraph to w as "# " comment lines (the
// header and footer lines of nccl-tests-style tables), wrapped at width
// characters; an empty paragraph writes nothing.
func writeComments(w io.Writer, width int, paragraphs ...string) {
	for _, p := range paragraphs {
		for _, l := range wrap(p, width) {
			fmt.Fprintf(w, "# %s\n", l)
		}
	}
}

// optRound is v rounded to digits decimals, or nil (JSON null) when ok is
// false: a value that is not defined, such as an efficiency without a
// reference.
func optRound(v float64, ok bool, digits int) *float64 {
	if !ok {
		return nil
	}
	v = round(v, digits)
	return &v
}

// optCell formats *v with prec decimals for a CSV cell, or "" when v is
// nil.
func optCell(v *float64, prec int) string {
	if v == nil {
		return ""
	}
	return fmtF(*v, prec)
}

// statusLine shows one transient status line on a terminal ("predict: size
// 3/31 (4K)"), rewritten in place and cleared before results are printed.
// Its zero value, for output that is not a terminal, shows nothing.
type statusLine struct {
	w      io.Writer
	prefix string
	width  int // length of the line on screen, to clear it
}

// progress returns the progress line for cmd: on stderr when stderr is a
// terminal, nowhere otherwise (a pipe or a file gets no progress).
func (e *env) progress(cmd string) *statusLine {
	if e.isTerminal == nil || !e.isTerminal(e.stderr) {
		return &statusLine{}
	}
	return &statusLine{w: e.stderr, prefix: "collsim: " + cmd + ": "}
}

// show replaces the line with the formatted status.
func (p *statusLine) show(format string, a ...any) {
	if p.w == nil {
		return
	}
	s := p.prefix + fmt.Sprintf(format, a...)
	pad := max(p.width-len(s), 0)
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", pad))
	p.width = len(s)
}

// clear erases the line, leaving the cursor at its start.
func (p *statusLine) clear() {
	if p.w == nil || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// parseInput parses input file k of n. On a terminal it shows how far the
// reading has come ("reading all_reduce.log (1 of 2): 40% of 250M"), which
// for a large log is most of the run.
func (e *env) parseInput(cmd, path string, k, n int) (*ingest.Artifact, error) {
	prog := e.progress(cmd)
	defer prog.clear()
	var o ingest.Options
	if prog.w != nil {
		name := filepath.Base(path)
		o.Progress = func(read, total int64) {
			if total > 0 {
				prog.show("reading %s (%d of %d): %d%% of %s", name, k, n, read*100/total, model.FormatBytes(model.Bytes(total)))
			} else {
				prog.show("reading %s (%d of %d): %s", name, k, n, model.FormatBytes(model.Bytes(read)))
			}
		}
	}
	return ingest.ParseFileWith(path, o)
}
