package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// line is one line of input with its 1-based number; cut is true when the
// line was longer than MaxLineLength and was truncated.
type line struct {
	num  int
	text string
	cut  bool
}

// eachLine calls fn for every line of data (without the line break and a
// trailing \r). Lines longer than MaxLineLength are truncated. fn returns
// false to stop early.
func eachLine(data []byte, fn func(l line) bool) {
	num := 0
	for len(data) > 0 {
		num++
		i := bytes.IndexByte(data, '\n')
		var b []byte
		if i < 0 {
			b, data = data, nil
		} else {
			b, data = data[:i], data[i+1:]
		}
		cut := false
		if len(b) > MaxLineLength {
			b, cut = b[:MaxLineLength], true
		}
		b = bytes.TrimRight(b, "\r")
		if !fn(line{num: num, text: string(b), cut: cut}) {
			return
		}
	}
}

// scanLines calls fn for every line read from r, as eachLine does for a
// byte slice: without the line break and a trailing \r, lines longer than
// MaxLineLength cut (and marked) and the rest of such a line skipped. It
// holds at most one line of MaxLineLength bytes (plus bufio's read buffer),
// so memory does not grow with the input. It returns r's error, if any.
func scanLines(r io.Reader, fn func(l line) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineLength+1)
	ls := &lineSplitter{}
	sc.Split(ls.split)
	num := 0
	for sc.Scan() {
		num++
		b := bytes.TrimRight(sc.Bytes(), "\r")
		if !fn(line{num: num, text: string(b), cut: ls.cut}) {
			return nil
		}
	}
	return sc.Err()
}

// lineSplitter is a bufio.SplitFunc that cuts lines at MaxLineLength
// bytes and drops the rest of a cut line.
type lineSplitter struct {
	dropping bool // inside the rest of a cut line
	cut      bool // the last token was cut
}

func (ls *lineSplitter) split(data []byte, atEOF bool) (int, []byte, error) {
	if ls.dropping {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			ls.dropping = false
			return i + 1, nil, nil
		}
		if atEOF {
			ls.dropping = false
		}
		return len(data), nil, nil
	}
	ls.cut = false
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		if i > MaxLineLength {
			ls.cut = true
			return i + 1, data[:MaxLineLength], nil
		}
		return i + 1, data[:i], nil
	}
	if len(data) > MaxLineLength {
		ls.cut, ls.dropping = true, true
		return MaxLineLength, data[:MaxLineLength], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// readError wraps an error met while reading an input.
func readError(name string, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("calibrate: %s: %w", name, err)
	}
	return fmt.Errorf("calibrate: %s: read: %w", name, err)
}

// head is the start of an input, split into lines, that detectors look at.
type head struct {
	raw    []byte
	lines  []string // with MPI/srun prefixes removed
	nLines int
	first  string // first non-blank line, trimmed
}

// maxHeadLines bounds the lines detectors look at.
const maxHeadLines = 20000

func newHead(b []byte) *head {
	h := &head{raw: b}
	eachLine(b, func(l line) bool {
		t := stripRankPrefix(l.text)
		h.lines = append(h.lines, t)
		if h.first == "" && strings.TrimSpace(t) != "" {
			h.first = strings.TrimSpace(t)
		}
		return len(h.lines) < maxHeadLines
	})
	h.nLines = len(h.lines)
	return h
}

// count returns how many head lines satisfy fn, stopping at limit.
func (h *head) count(limit int, fn func(s string) bool) int {
	n := 0
	for _, s := range h.lines {
		if fn(s) {
			n++
			if n >= limit {
				break
			}
		}
	}
	return n
}

// has reports whether some head line satisfies fn.
func (h *head) has(fn func(s string) bool) bool { return h.count(1, fn) > 0 }

var (
	// OpenMPI --tag-output: "[1,0]<stdout>:"; srun --label: "  0: ";
	// Intel MPI and MPICH -l (-prepend-rank): "[0] ".
	reMPIPrefix  = regexp.MustCompile(`^\[\d+,\d+\]<std(?:out|err)>:`)
	reRankPrefix = regexp.MustCompile(`^\[\d{1,6}\] `)
	reSrunPrefix = regexp.MustCompile(`^ {0,4}\d{1,5}: `)
)

// stripRankPrefix removes launcher prefixes that tag each output line with
// the rank that printed it.
func stripRankPrefix(s string) string {
	if strings.HasPrefix(s, "[") {
		if loc := reMPIPrefix.FindStringIndex(s); loc != nil {
			return s[loc[1]:]
		}
		if loc := reRankPrefix.FindStringIndex(s); loc != nil {
			return s[loc[1]:]
		}
	}
	if len(s) > 2 && (s[0] == ' ' || (s[0] >= '0' && s[0] <= '9')) {
		if loc := reSrunPrefix.FindStringIndex(s); loc != nil {
			return s[loc[1]:]
		}
	}
	return s
}

// interner returns one copy of each distinct string it is given (up to
// maxInterned of them; later ones are copied, not kept), so that records
// hold neither substrings of their input lines, which would keep whole
// lines alive, nor many copies of the same host or transport name. The zero
// value is ready to use.
type interner struct{ m map[string]string }

const maxInterned = 4096

func (in *interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	c := strings.Clone(s)
	if in.m == nil {
		in.m = map[string]string{}
	}
	if len(in.m) < maxInterned {
		in.m[c] = c
	}
	return c
}

// skipper collects Skip records with a cap.
type skipper struct {
	list    []Skip
	dropped int
}

func (k *skipper) add(num int, reason, text string) {
	if len(k.list) >= maxSkipped {
		k.dropped++
		return
	}
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	k.list = append(k.list, Skip{Line: num, Reason: reason, Text: strings.TrimSpace(text)})
}

func (k *skipper) result() []Skip {
	if k.dropped > 0 {
		return append(k.list, Skip{Reason: fmt.Sprintf("%d more skipped lines not listed", k.dropped)})
	}
	return k.list
}

// parseNum parses a finite float as nccl-tests and friends print it; "N/A",
// "NaN", "Inf" and other text give ok false.
func parseNum(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// isInt reports whether s is a non-negative decimal integer.
func isInt(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendCapped appends v to list unless the list has reached maxListItems.
func appendCapped[T any](list []T, v T) []T {
	if len(list) >= maxListItems {
		return list
	}
	return append(list, v)
}

// addUnique appends s when it is not already in list (capped).
func addUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return appendCapped(list, s)
}
