package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// WriteMarkdown renders d as GitHub-flavoured Markdown to w and writes each
// plot as an SVG file under assetDir.
//
// A plot's file is named assetPrefix + "figNN-<slug>-<hash>.svg", where NN
// numbers the plots in order, slug comes from the plot title and hash is
// the first 8 hex digits of the SHA-256 of the SVG, so a file name always
// refers to the same picture and re-rendering never changes the picture
// behind an older report. The Markdown links to each plot by that name,
// relative to the Markdown file: pass the directory the Markdown will be
// saved in as assetDir ("" is the current directory). assetPrefix is
// slash-separated and may name a subdirectory ("report_files/"), which is
// created; it must be relative and must not contain "..". Each plot's
// numbers follow it in a <details> table.
//
// The plot files are written atomically before anything is written to w;
// nothing is written when d is invalid or a plot fails to render. The same
// Document gives byte-identical output and files.
func WriteMarkdown(w io.Writer, d *Document, assetDir, assetPrefix string) error {
	md, assets, err := renderMarkdown(d, assetPrefix)
	if err != nil {
		return err
	}
	for _, a := range assets {
		p := filepath.Join(assetDir, filepath.FromSlash(a.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("reports: %w", err)
		}
		if err := writeAtomic(p, a.data); err != nil {
			return err
		}
	}
	if _, err := w.Write(md); err != nil {
		return fmt.Errorf("reports: writing Markdown: %w", err)
	}
	return nil
}

// asset is a file a Markdown report refers to: name is its slash-separated
// path relative to the Markdown file.
type asset struct {
	name string
	data []byte
}

// checkAssetPrefix rejects prefixes that would place files outside the
// asset directory or break links.
func checkAssetPrefix(prefix string) error {
	switch {
	case strings.ContainsAny(prefix, "\\\x00\n\r"):
		return fmt.Errorf("reports: asset prefix %q contains a backslash or control character", prefix)
	case strings.HasPrefix(prefix, "/") || filepath.IsAbs(prefix):
		return fmt.Errorf("reports: asset prefix %q is absolute; it must be relative to the Markdown file", prefix)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == ".." {
			return fmt.Errorf("reports: asset prefix %q leaves the asset directory", prefix)
		}
	}
	return nil
}

// slug turns a title into a short file-name fragment of [a-z0-9-].
func slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			if b.Len() >= 40 {
				break
			}
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "plot"
	}
	return b.String()
}

// figureName returns the asset name of plot number n with the given SVG.
func figureName(prefix string, n int, title string, svg []byte) string {
	sum := sha256.Sum256(svg)
	return fmt.Sprintf("%sfig%02d-%s-%s.svg", prefix, n, slug(title), hex.EncodeToString(sum[:4]))
}

// linkTarget escapes a slash-separated relative path for a Markdown link.
func linkTarget(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		s = url.PathEscape(s)
		s = strings.NewReplacer("(", "%28", ")", "%29").Replace(s)
		segs[i] = s
	}
	return strings.Join(segs, "/")
}

// renderMarkdown renders d to Markdown text plus the plot files it links to.
func renderMarkdown(d *Document, assetPrefix string) ([]byte, []asset, error) {
	if err := checkAssetPrefix(assetPrefix); err != nil {
		return nil, nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	var assets []asset
	fmt.Fprintf(&b, "# %s\n", mdLine(d.Title))
	if d.Subtitle != "" {
		fmt.Fprintf(&b, "\n*%s*\n", mdLine(d.Subtitle))
	}
	if meta := metaLine(d); meta != "" {
		fmt.Fprintf(&b, "\n%s\n", mdLine(meta))
	}
	if d.Verdict != nil || strings.TrimSpace(d.Summary) != "" {
		b.WriteString("\n## Summary\n")
		if d.Verdict != nil {
			mdVerdict(&b, *d.Verdict)
		}
		for _, p := range paragraphs(d.Summary) {
			fmt.Fprintf(&b, "\n%s\n", mdText(p))
		}
	}
	if len(d.Inputs) > 0 {
		b.WriteString("\n## Inputs\n")
		t := Table{Columns: []string{"Input", "Value"}, Align: []Align{AlignLeft, AlignLeft}}
		for _, kv := range d.Inputs {
			t.Rows = append(t.Rows, []string{kv.Key, kv.Value})
		}
		mdTable(&b, t)
	}
	fig := 0
	pal := newPalette()
	for i, s := range d.Sections {
		fmt.Fprintf(&b, "\n## %s\n", mdLine(s.Title))
		for j, blk := range s.Blocks {
			blk, err := deref(blk)
			if err != nil {
				return nil, nil, fmt.Errorf("reports: section %d (%q) block %d: %w", i+1, s.Title, j+1, err)
			}
			switch blk := blk.(type) {
			case Paragraph:
				for _, p := range paragraphs(blk.Text) {
					fmt.Fprintf(&b, "\n%s\n", mdText(p))
				}
			case Code:
				if blk.Caption != "" {
					fmt.Fprintf(&b, "\n**%s**\n", mdLine(blk.Caption))
				}
				fence := codeFence(blk.Text)
				fmt.Fprintf(&b, "\n%stext\n%s\n%s\n", fence, strings.TrimRight(blk.Text, "\n"), fence)
			case Table:
				mdTable(&b, blk)
			case Findings:
				b.WriteString("\n")
				for _, f := range blk {
					fmt.Fprintf(&b, "- **%s: %s**", strings.ToUpper(f.Severity.String()), mdLine(f.Title))
					if f.Evidence != "" {
						fmt.Fprintf(&b, "\\\n  Evidence: %s", mdLine(f.Evidence))
					}
					if f.Fix != "" {
						fmt.Fprintf(&b, "\\\n  Fix: %s", mdLine(f.Fix))
					}
					b.WriteString("\n")
				}
			case Verdict:
				mdVerdict(&b, blk)
			case Plot:
				fig++
				svg, err := renderPlot(blk, pal)
				if err != nil {
					return nil, nil, fmt.Errorf("reports: section %d (%q) block %d: %w", i+1, s.Title, j+1, err)
				}
				name := figureName(assetPrefix, fig, blk.PlotTitle(), svg)
				assets = append(assets, asset{name: name, data: svg})
				fmt.Fprintf(&b, "\n![%s](%s)\n", mdLine(blk.PlotTitle()), linkTarget(name))
				if c := blk.PlotCaption(); c != "" {
					fmt.Fprintf(&b, "\n*%s*\n", mdLine(c))
				}
				fmt.Fprintf(&b, "\n<details>\n<summary>Data behind “%s”</summary>\n", html.EscapeString(oneLine(blk.PlotTitle())))
				mdTable(&b, blk.DataTable())
				b.WriteString("\n</details>\n")
			default:
				return nil, nil, fmt.Errorf("reports: section %d (%q) block %d: unsupported block type %T", i+1, s.Title, j+1, blk)
			}
		}
	}
	if len(d.Assumptions) > 0 {
		b.WriteString("\n## Assumptions\n")
		t := Table{Columns: []string{"Term", "Value", "Source"}, Align: []Align{AlignLeft, AlignLeft, AlignLeft}}
		for _, a := range d.Assumptions {
			t.Rows = append(t.Rows, []string{a.Term, a.Value, a.Source})
		}
		mdTable(&b, t)
	}
	if len(d.OtherAssumptions) > 0 {
		if len(d.Assumptions) == 0 {
			b.WriteString("\n## Assumptions\n")
		}
		fmt.Fprintf(&b, "\n<details>\n<summary>%s</summary>\n", html.EscapeString(otherAssumptionsLabel(len(d.OtherAssumptions))))
		t := Table{Columns: []string{"Term", "Value", "Source"}, Align: []Align{AlignLeft, AlignLeft, AlignLeft}}
		for _, a := range d.OtherAssumptions {
			t.Rows = append(t.Rows, []string{a.Term, a.Value, a.Source})
		}
		mdTable(&b, t)
		b.WriteString("\n</details>\n")
	}
	if len(d.CommandLine) > 0 {
		cmd := shellQuote(d.CommandLine)
		fence := codeFence(cmd)
		fmt.Fprintf(&b, "\n## Reproduce\n\n%ssh\n%s\n%s\n", fence, cmd, fence)
	}
	made := "Made by collsim"
	if d.Version != "" {
		made += " " + d.Version
	}
	if date := formatDate(d.Date); date != "" {
		made += " on " + date
	}
	fmt.Fprintf(&b, "\n---\n\n*%s.*\n", mdLine(made))
	return b.Bytes(), assets, nil
}

// metaLine is "Generated <date> · collsim <version>", or less.
func metaLine(d *Document) string {
	var parts []string
	if date := formatDate(d.Date); date != "" {
		parts = append(parts, "Generated "+date)
	}
	if d.Version != "" {
		parts = append(parts, "collsim "+d.Version)
	}
	return strings.Join(parts, " · ")
}

func mdVerdict(b *bytes.Buffer, v Verdict) {
	fmt.Fprintf(b, "\n**%s**", v.Status)
	if v.Label != "" {
		fmt.Fprintf(b, " · %s", mdLine(v.Label))
	}
	b.WriteString("\n")
	if v.Detail != "" {
		fmt.Fprintf(b, "\n%s\n", mdText(v.Detail))
	}
}

// mdTable writes t as a GFM table, preceded by its caption in bold and
// followed by its notes as a list.
func mdTable(b *bytes.Buffer, t Table) {
	if t.Caption != "" {
		fmt.Fprintf(b, "\n**%s**\n", mdLine(t.Caption))
	}
	b.WriteString("\n|")
	for _, c := range t.Columns {
		fmt.Fprintf(b, " %s |", mdCell(c))
	}
	b.WriteString("\n|")
	for _, a := range t.alignments() {
		switch a {
		case AlignRight:
			b.WriteString(" ---: |")
		case AlignCenter:
			b.WriteString(" :---: |")
		default:
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for r := range t.Rows {
		b.WriteString("|")
		for c := range t.Columns {
			fmt.Fprintf(b, " %s |", mdCell(t.cell(r, c)))
		}
		b.WriteString("\n")
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			fmt.Fprintf(b, "- %s\n", mdLine(n))
		}
	}
}

// codeFence returns a backtick fence longer than any backtick run in text.
func codeFence(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// oneLine collapses line breaks into spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
}

// mdLine escapes s as inline Markdown on a single line that may start a
// line (headings, list items, emphasis).
func mdLine(s string) string { return mdEscapeLine(oneLine(s)) }

// mdCell escapes s for a GFM table cell: inline escapes, pipes, and line
// breaks as <br>. Block syntax means nothing inside a cell.
func mdCell(s string) string {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(mdEscapeInline(strings.TrimSpace(l)), "|", `\|`)
	}
	return strings.Join(lines, "<br>")
}

// mdText escapes a paragraph: each line is escaped, leading spaces dropped
// so no line turns into a code block.
func mdText(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = mdEscapeLine(strings.TrimSpace(l))
	}
	return strings.Join(lines, "\n")
}

// mdEscapeLine escapes one line of text that starts a Markdown line:
// inline syntax anywhere (see mdEscapeInline) and block syntax (headings,
// quotes, list items, rules, setext underlines, tables) at its start.
func mdEscapeLine(s string) string {
	out := mdEscapeInline(s)
	if out == "" {
		return out
	}
	spaceAfter := func(k int) bool { return k >= len(out) || out[k] == ' ' || out[k] == '\t' }
	switch c := out[0]; {
	case c == '#' || c == '>' || c == '|':
		return `\` + out
	case c == '-' && (spaceAfter(1) || strings.Trim(out, "- ") == ""):
		return `\` + out
	case c == '+' && spaceAfter(1):
		return `\` + out
	case c == '=' && strings.Trim(out, "= ") == "":
		return `\` + out
	}
	// An ordered-list marker: up to 9 digits, then "." or ")", then a space.
	k := 0
	for k < len(out) && k < 9 && out[k] >= '0' && out[k] <= '9' {
		k++
	}
	if k > 0 && k < len(out) && (out[k] == '.' || out[k] == ')') && spaceAfter(k+1) {
		return out[:k] + `\` + out[k:]
	}
	return out
}

// mdEscapeInline escapes the characters that start inline Markdown so that
// s shows literally: emphasis (* and _ outside words), code spans,
// links and images ([), raw HTML and autolinks (<), strikethrough (~),
// GitHub math ($), entities (&name;) and backslash escapes. It leaves
// harmless punctuation alone so that the raw file stays readable.
func mdEscapeInline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '`', '*', '[', '<', '~', '$':
			b.WriteByte('\\')
		case '_':
			if !(i > 0 && isAlnum(s[i-1]) && i+1 < len(s) && isAlnum(s[i+1])) {
				b.WriteByte('\\')
			}
		case '\\':
			if i+1 == len(s) || isPunct(s[i+1]) {
				b.WriteByte('\\')
			}
		case '&':
			if i+1 < len(s) && (isAlnum(s[i+1]) || s[i+1] == '#') {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isPunct reports whether c is ASCII punctuation (what a backslash escapes).
func isPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
