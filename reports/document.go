package reports

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Document is one report: what was asked, what came out, and why to believe
// it. The zero value is not renderable; a Document needs at least a Title.
// Renderers never modify a Document.
type Document struct {
	// Title names the report, e.g. "AllReduce on 4x DGX H100: validation".
	Title string
	// Subtitle is an optional second line under the title.
	Subtitle string
	// Date is when the results were produced. The caller provides it so that
	// rendering stays deterministic; the zero time omits it.
	Date time.Time
	// Version is the collsim version that produced the report (may be empty).
	Version string
	// CommandLine is the command that produced the report, one argument per
	// element, e.g. {"collsim", "validate", "--report", "out.html"}. It is
	// shown shell-quoted so a reader can rerun it. Nil omits it.
	CommandLine []string
	// Summary is the one-paragraph executive summary: the verdict, the
	// bottleneck and the recommendation, in plain sentences. Blank lines
	// separate paragraphs.
	Summary string
	// Verdict, when not nil, is shown as a badge next to the summary.
	Verdict *Verdict
	// Inputs are the inputs that matter to a reader (cluster, collective,
	// sizes, files read), in order.
	Inputs []KV
	// Assumptions are the model terms and parameters behind the numbers,
	// each with the source it came from.
	Assumptions []Assumption
	// OtherAssumptions are terms of the model that do not apply to these
	// results (another NIC kind, PCIe generation or GPU than the cluster
	// has). They are listed collapsed under the Assumptions so that the
	// model stays complete without burying the terms that matter.
	OtherAssumptions []Assumption
	// Sections hold the body of the report, in order.
	Sections []Section
}

// KV is one labelled value, such as an input ("cluster", "4x DGX H100").
type KV struct {
	Key, Value string
}

// Assumption is one documented model term: what it is, the value used and
// where that value comes from (a measurement, a datasheet, a calibration
// profile, a default). Sources are shown as text, never as links.
type Assumption struct {
	Term, Value, Source string
}

// Section is a titled part of a report holding blocks in order.
type Section struct {
	// Title is the section heading; it must not be empty.
	Title string
	// Blocks are the contents of the section, in order. A nil element is an
	// error at render time.
	Blocks []Block
}

// Block is one element of a Section: a Paragraph, Code, Table, Findings,
// Verdict, or one of the plot specs (BusBWPlot, TimePlot, BarPlot,
// ScalingPlot, ParetoPlot, LinkUtilPlot, HeatMapPlot, TopologyPlot). Values and pointers
// of these types are both accepted. The set is closed: other packages cannot
// add block kinds.
type Block interface {
	isBlock()
}

// Paragraph is a block of plain text. Blank lines separate paragraphs; the
// text is escaped, never interpreted as HTML or Markdown.
type Paragraph struct {
	Text string
}

// Code is a block of preformatted text shown in a monospace font, such as an
// nccl-tests style result table or a configuration excerpt.
type Code struct {
	// Caption is an optional line shown above the text.
	Caption string
	// Text is shown verbatim.
	Text string
}

// Align is the horizontal alignment of a table column.
type Align int

// Column alignments. AlignAuto right-aligns a column whose non-empty cells
// all look like numbers and left-aligns anything else.
const (
	AlignAuto Align = iota
	AlignLeft
	AlignRight
	AlignCenter
)

// String returns the alignment's name ("auto", "left", "right", "center").
func (a Align) String() string {
	switch a {
	case AlignAuto:
		return "auto"
	case AlignLeft:
		return "left"
	case AlignRight:
		return "right"
	case AlignCenter:
		return "center"
	}
	return fmt.Sprintf("Align(%d)", int(a))
}

// Table is a block of tabular data. Cells are text: the caller formats
// numbers with their units or puts the unit in the column header.
type Table struct {
	// Caption is an optional line shown above the table.
	Caption string
	// Columns are the column headers; a table needs at least one.
	Columns []string
	// Rows hold the cells. A row shorter than Columns is padded with empty
	// cells; a longer one is an error.
	Rows [][]string
	// Align gives each column's alignment; missing entries are AlignAuto.
	Align []Align
	// Notes are footnotes shown under the table.
	Notes []string
}

// Severity grades a Finding.
type Severity int

// Severities, from least to most serious.
const (
	SeverityInfo Severity = iota
	SeverityWarning
	SeverityCritical
)

// String returns the severity's name ("info", "warning", "critical").
func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityCritical:
		return "critical"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Finding is one diagnosis: what is wrong (or notable), the evidence for it,
// and what to do about it.
type Finding struct {
	Severity Severity
	// Title is a short statement, e.g. "NCCL fell back to TCP sockets".
	Title string
	// Evidence is what in the measurements or logs shows it.
	Evidence string
	// Fix is the recommended action; empty when there is none.
	Fix string
}

// Findings is a block listing findings in the given order.
type Findings []Finding

// Status is the outcome shown by a Verdict badge.
type Status int

// Verdict statuses.
const (
	StatusInfo Status = iota
	StatusPass
	StatusWarn
	StatusFail
)

// String returns the status's badge text ("INFO", "PASS", "WARN", "FAIL").
func (s Status) String() string {
	switch s {
	case StatusInfo:
		return "INFO"
	case StatusPass:
		return "PASS"
	case StatusWarn:
		return "WARN"
	case StatusFail:
		return "FAIL"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Verdict is a pass/warn/fail/info badge with a short label, e.g.
// {StatusFail, "busbw 38% below model at 1G", "..."}. It is a block and can
// also head the whole Document.
type Verdict struct {
	Status Status
	// Label is the one-line verdict shown next to the badge.
	Label string
	// Detail is optional supporting text.
	Detail string
}

func (Paragraph) isBlock() {}
func (Code) isBlock()      {}
func (Table) isBlock()     {}
func (Findings) isBlock()  {}
func (Verdict) isBlock()   {}

// blockName describes a block for error messages, e.g. `table "Inputs"`.
func blockName(b Block) string {
	switch b := b.(type) {
	case Paragraph:
		return "paragraph"
	case Code:
		return fmt.Sprintf("code %q", b.Caption)
	case Table:
		return fmt.Sprintf("table %q", b.Caption)
	case Findings:
		return "findings"
	case Verdict:
		return fmt.Sprintf("verdict %q", b.Label)
	case Plot:
		return fmt.Sprintf("%s %q", b.kind(), b.PlotTitle())
	}
	return fmt.Sprintf("%T", b)
}

// deref turns pointers to block types into values so that renderers switch
// over value types only. A nil pointer is an error.
func deref(b Block) (Block, error) {
	var nilPtr bool
	switch p := b.(type) {
	case nil:
		return nil, errors.New("nil block")
	case *Paragraph:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *Code:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *Table:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *Findings:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *Verdict:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *BusBWPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *TimePlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *BarPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *ScalingPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *ParetoPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *LinkUtilPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *HeatMapPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	case *TopologyPlot:
		if nilPtr = p == nil; !nilPtr {
			return *p, nil
		}
	default:
		return b, nil
	}
	return nil, fmt.Errorf("nil %T block", b)
}

// Validate reports the first problem that would stop d from rendering, or
// nil. It checks structure (title, section titles, table shapes, enum
// values) and plot data (positive sizes on log axes, finite values, matching
// lengths). WriteHTML, WriteMarkdown and WriteFile call it first. It costs
// time linear in the size of the document.
func (d *Document) Validate() error {
	if d == nil {
		return errors.New("reports: nil document")
	}
	if strings.TrimSpace(d.Title) == "" {
		return errors.New("reports: document has no title")
	}
	if d.Verdict != nil {
		if err := d.Verdict.validate(); err != nil {
			return fmt.Errorf("reports: document verdict: %w", err)
		}
	}
	for i, s := range d.Sections {
		if strings.TrimSpace(s.Title) == "" {
			return fmt.Errorf("reports: section %d has no title", i+1)
		}
		for j, b := range s.Blocks {
			if err := validateBlock(b); err != nil {
				return fmt.Errorf("reports: section %d (%q) block %d: %w", i+1, s.Title, j+1, err)
			}
		}
	}
	return nil
}

func validateBlock(b Block) error {
	b, err := deref(b)
	if err != nil {
		return err
	}
	switch b := b.(type) {
	case Table:
		err = b.validate()
	case Findings:
		for i, f := range b {
			if err = f.validate(); err != nil {
				err = fmt.Errorf("finding %d: %w", i+1, err)
				break
			}
		}
	case Verdict:
		err = b.validate()
	case Plot:
		err = b.validate()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", blockName(b), err)
	}
	return nil
}

func (t Table) validate() error {
	if len(t.Columns) == 0 {
		return errors.New("no columns")
	}
	if len(t.Align) > len(t.Columns) {
		return fmt.Errorf("%d alignments for %d columns", len(t.Align), len(t.Columns))
	}
	for i, a := range t.Align {
		if a < AlignAuto || a > AlignCenter {
			return fmt.Errorf("column %d: invalid alignment %d", i+1, int(a))
		}
	}
	for i, r := range t.Rows {
		if len(r) > len(t.Columns) {
			return fmt.Errorf("row %d has %d cells for %d columns", i+1, len(r), len(t.Columns))
		}
	}
	return nil
}

func (f Finding) validate() error {
	if f.Severity < SeverityInfo || f.Severity > SeverityCritical {
		return fmt.Errorf("invalid severity %d", int(f.Severity))
	}
	if strings.TrimSpace(f.Title) == "" {
		return errors.New("no title")
	}
	return nil
}

func (v Verdict) validate() error {
	if v.Status < StatusInfo || v.Status > StatusFail {
		return fmt.Errorf("invalid status %d", int(v.Status))
	}
	return nil
}

// alignments returns the effective alignment of every column of t,
// resolving AlignAuto from the cells.
func (t Table) alignments() []Align {
	out := make([]Align, len(t.Columns))
	for c := range out {
		a := AlignAuto
		if c < len(t.Align) {
			a = t.Align[c]
		}
		if a == AlignAuto {
			a = AlignLeft
			numeric, seen := true, false
			for _, r := range t.Rows {
				if c >= len(r) || strings.TrimSpace(r[c]) == "" {
					continue
				}
				seen = true
				if !looksNumeric(r[c]) {
					numeric = false
					break
				}
			}
			if numeric && seen {
				a = AlignRight
			}
		}
		out[c] = a
	}
	return out
}

// looksNumeric reports whether s starts like a number ("12.5", "-3", "+4%",
// "1.2 GB/s", "n/a" counts too so that missing values keep a column numeric).
func looksNumeric(s string) bool {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "n/a") || s == "-" || s == "–" {
		return true
	}
	s = strings.TrimLeft(s, "+-−$")
	return s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '.' && len(s) > 1 && s[1] >= '0' && s[1] <= '9')
}

// cell returns row r's cell c, or "" past the end of a short row.
func (t Table) cell(r, c int) string {
	if c < len(t.Rows[r]) {
		return t.Rows[r][c]
	}
	return ""
}

// paragraphs splits text at blank lines, trimming each paragraph and
// dropping empty ones.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// shellQuote joins args as a POSIX shell command line, quoting arguments
// that need it with single quotes.
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// otherAssumptionsLabel is the heading of the collapsed list of terms that
// do not apply.
func otherAssumptionsLabel(n int) string {
	if n == 1 {
		return "1 more model term, which does not apply to these results"
	}
	return fmt.Sprintf("%d more model terms, which do not apply to these results", n)
}

// formatDate prints the report date, or "" for the zero time.
func formatDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04 MST")
}
