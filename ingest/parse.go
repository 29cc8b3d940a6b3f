package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Input limits. Every parser works on at most MaxInputSize bytes, splits it
// into lines of at most MaxLineLength bytes (longer lines are cut and the cut
// is recorded in Artifact.Skipped), and detects the format from the first
// DetectWindow bytes, so that an unrecognised file is rejected after reading
// only that much.
const (
	MaxInputSize  = 256 << 20
	MaxLineLength = 64 << 10
	DetectWindow  = 1 << 20
)

// Caps on what one artifact holds, so that no input allocates without bound.
const (
	maxRuns        = 4096
	maxRowsPerRun  = 1 << 16
	maxSkipped     = 1000
	maxConnections = 1 << 17
	maxListItems   = 4096 // rings, trees, warnings, fallbacks, HCAs, figures, ports
	maxMatrixDim   = 512  // rows/columns of a bandwidth or path matrix, GPUs or NICs of a topology
	maxMatrices    = 256
	// maxRecords bounds the table rows and device lines of one artifact,
	// maxCells the matrix cells.
	maxRecords = 1 << 20
	maxCells   = 1 << 23
)

// ErrUnrecognized is wrapped by the error Parse returns when nothing in the
// input could be recognised as a known format, or when a recognised format
// yielded no usable data. The error text says why.
var ErrUnrecognized = errors.New("unrecognized input")

// ErrTooLarge is wrapped by the error Parse returns for inputs above MaxInputSize.
var ErrTooLarge = errors.New("input too large")

// format is one entry of the detector: a kind, how to recognise it from the
// start of a file, and how to parse the whole file.
type format struct {
	kind   Kind
	detect func(h *head) bool
	parse  func(name string, data []byte) (*Artifact, error)
	// stream, when set, parses the whole input from r in one pass without
	// holding it (head is its start, already read); Parse prefers it.
	stream func(name string, r io.Reader, head []byte) (*Artifact, error)
}

// formats is the ordered detector list: the first entry whose detect
// function accepts the start of a file parses it. More specific formats come
// first (an nccl-tests file also holds NCCL log lines, a topo file may hold a
// prompt line). To add a format, add one line here and nothing else:
// collsim hwbench JSON (converter in hwbench.go) is the first entry, before
// the generic JSON entries, since a report embeds nccl-tests results.
func formats() []format {
	return []format{
		{KindHWBench, func(h *head) bool { return isHWBenchAnyVersion(h.raw) }, ParseHWBench, nil},
		{KindNCCLTestsJSON, detectNCCLTestsJSON, parseNCCLTestsJSON, nil},
		{KindNVBandwidth, detectNVBandwidthJSON, parseNVBandwidthJSON, nil},
		{KindTopoXML, detectTopoXML, parseTopoXML, nil},
		{KindNCCLTests, detectNCCLTests, parseNCCLTests, streamNCCLTests},
		{KindP2PBandwidth, detectP2P, parseP2P, nil},
		{KindNVBandwidth, detectNVBandwidth, parseNVBandwidth, nil},
		{KindPerftest, detectPerftest, parsePerftest, nil},
		{KindIBStat, detectIBStat, parseIBStat, nil},
		{KindTopoMatrix, detectTopoMatrix, parseTopoMatrix, nil},
		{KindNCCLLog, detectNCCLLog, parseNCCLLog, streamNCCLLog},
		{KindSummary, detectSummary, parseSummary, nil},
	}
}

// ParseFile reads the file at path, detects its format from its content and
// parses it. Files larger than MaxInputSize are refused before reading. See
// Parse for the errors.
func ParseFile(path string) (*Artifact, error) {
	return ParseFileWith(path, Options{})
}

// Options tune ParseFileWith and ParseWith. The zero value is what
// ParseFile and Parse use.
type Options struct {
	// Progress, when not nil, is called as the input is read, from the
	// goroutine that parses: read is the number of bytes consumed so far
	// and total the input's size (-1 when unknown). It is called about
	// every ProgressStep bytes and once more when reading ends (read ==
	// total for a file read to its end), so its cost does not grow with the
	// number of lines. Parsing of nccl-tests text and NCCL_DEBUG logs
	// streams, so read advances as records are found; other formats are
	// read whole and then parsed.
	Progress func(read, total int64)
	// Size is the input's size in bytes for Progress; ParseFileWith sets
	// it from the file. 0 means unknown.
	Size int64
}

// ProgressStep is how many bytes of input pass between two calls of
// Options.Progress.
const ProgressStep = 1 << 20

// ParseFileWith is ParseFile with options.
func ParseFileWith(path string, o Options) (*Artifact, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("calibrate: %s: is a directory", path)
	}
	if st.Size() > MaxInputSize {
		return nil, fmt.Errorf("calibrate: %s: %d bytes is more than the %d-byte limit: %w", path, st.Size(), MaxInputSize, ErrTooLarge)
	}
	if o.Size == 0 && st.Mode().IsRegular() {
		o.Size = st.Size()
	}
	return ParseWith(path, f, o)
}

// Parse detects the format of r's content (not its name) and parses it into
// an Artifact; name is used in errors and as Artifact.File. It reads at most
// DetectWindow bytes before deciding whether it recognises the content, so a
// large unrecognised input is rejected quickly, and at most MaxInputSize
// bytes in all. nccl-tests text and NCCL_DEBUG logs are parsed as they are
// read, line by line, so memory grows with the records found, not with the
// input; other formats are held in memory once.
//
// Errors carry a "calibrate: name:line:" prefix. They wrap ErrUnrecognized
// when nothing could be recognised (empty input, binary data, no known
// format) or when a recognised format held no usable data (a table header
// with no complete row, say), ErrTooLarge above MaxInputSize, and the read
// error when r fails.
func Parse(name string, r io.Reader) (*Artifact, error) {
	return ParseWith(name, r, Options{})
}

// ParseWith is Parse with options (a progress callback).
func ParseWith(name string, r io.Reader, o Options) (*Artifact, error) {
	if o.Progress == nil {
		return parseLimited(name, r, MaxInputSize)
	}
	total := o.Size
	if total <= 0 {
		total = -1
	}
	cr := &countingReader{r: r, total: total, fn: o.Progress}
	a, err := parseLimited(name, cr, MaxInputSize)
	cr.fn(cr.n, cr.total)
	return a, err
}

// countingReader reports progress every ProgressStep bytes.
type countingReader struct {
	r       io.Reader
	n, last int64
	total   int64
	fn      func(read, total int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n-c.last >= ProgressStep {
		c.last = c.n
		c.fn(c.n, c.total)
	}
	return n, err
}

// limitReader returns r's bytes and ErrTooLarge once more than n have
// been read.
type limitReader struct {
	r     io.Reader
	n     int64
	limit int // the whole input's limit, for the message
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, l.err()
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, l.err()
	}
	return n, err
}

func (l *limitReader) err() error { return fmt.Errorf("more than %d bytes: %w", l.limit, ErrTooLarge) }

func parseLimited(name string, r io.Reader, limit int) (*Artifact, error) {
	window := min(DetectWindow, limit)
	headBuf := make([]byte, window)
	n, err := io.ReadFull(r, headBuf)
	headBuf = headBuf[:n]
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		err = nil
	case err != nil:
		return nil, fmt.Errorf("calibrate: %s: read: %w", name, err)
	}
	if len(bytes.TrimSpace(headBuf)) == 0 {
		return nil, fmt.Errorf("calibrate: %s:1: empty input: %w", name, ErrUnrecognized)
	}
	if bytes.HasPrefix(headBuf, []byte{0x1f, 0x8b}) {
		out := strings.TrimSuffix(name, ".gz")
		if out == name {
			out = name + ".txt" // never the input itself: the shell would empty it first
		}
		return nil, fmt.Errorf("calibrate: %s:1: gzip-compressed: decompress it first (gunzip -c %s > %s): %w", name, name, out, ErrUnrecognized)
	}
	if off, ok := binaryAt(headBuf); ok {
		return nil, fmt.Errorf("calibrate: %s:%d: binary data (byte offset %d is not text): %w", name, lineAt(headBuf, off), off, ErrUnrecognized)
	}
	h := newHead(headBuf)
	var chosen *format
	fs := formats()
	for i := range fs {
		if fs[i].detect(h) {
			chosen = &fs[i]
			break
		}
	}
	if chosen == nil {
		return nil, fmt.Errorf("calibrate: %s:1: no known format in the first %d lines (looked for nccl-tests tables or -J JSON, NCCL_DEBUG=INFO lines, nvidia-smi topo -m, NCCL topology XML, p2pBandwidthLatencyTest, nvbandwidth, perftest, ibstat/ibstatus, published statements): %w",
			name, h.nLines, ErrUnrecognized)
	}
	var a *Artifact
	switch {
	case chosen.stream != nil:
		var in io.Reader = bytes.NewReader(headBuf)
		if len(headBuf) == window {
			in = io.MultiReader(in, &limitReader{r: r, n: int64(limit - window), limit: limit})
		}
		a, err = chosen.stream(name, in, headBuf)
	default:
		data := headBuf
		if len(headBuf) == window {
			rest, err := io.ReadAll(&limitReader{r: r, n: int64(limit - window), limit: limit})
			if err != nil {
				return nil, readError(name, err)
			}
			data = append(headBuf, rest...)
		}
		a, err = chosen.parse(name, data)
	}
	if err != nil {
		return nil, err
	}
	a.File = name
	if a.Kind == "" {
		a.Kind = chosen.kind
	}
	addFindings(a)
	return a, nil
}

// binaryAt reports whether b looks like binary data: a NUL byte, or more
// than 1% of invalid UTF-8 or control characters. off is the first offending byte.
func binaryAt(b []byte) (off int, binary bool) {
	bad, first := 0, -1
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0 {
			return i, true
		}
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v' && c != 0x1b {
				bad++
				if first < 0 {
					first = i
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			// A rune cut at the end of the window is not an error.
			if len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:]) {
				break
			}
			bad++
			if first < 0 {
				first = i
			}
		}
		i += size
	}
	if bad > 0 && bad*100 > len(b) {
		return first, true
	}
	return 0, false
}

// lineAt returns the 1-based line of byte offset off in b.
func lineAt(b []byte, off int) int {
	if off > len(b) {
		off = len(b)
	}
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}

// errNoData is the error for a recognised format that yielded nothing usable.
func errNoData(name string, line int, format string, a ...any) error {
	return fmt.Errorf("calibrate: %s:%d: %s: %w", name, line, fmt.Sprintf(format, a...), ErrUnrecognized)
}
