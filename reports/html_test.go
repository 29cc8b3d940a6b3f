package reports

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// What a browser could fetch: URL attributes inside tags, and url() and
// @import inside <style> elements and style attributes. Escaped text
// cannot match, because it holds no raw "<".
var (
	tagRE   = regexp.MustCompile(`<[A-Za-z][^>]*>`)
	styleRE = regexp.MustCompile(`(?is)<style[^>]*>(.*?)</style>`)
	// attrRE reads one attribute at a time, consuming quoted values whole
	// so that text inside a value is never taken for another attribute.
	attrRE  = regexp.MustCompile(`([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?`)
	urlAttr = map[string]bool{"src": true, "href": true, "xlink:href": true, "srcset": true, "poster": true, "data": true, "action": true, "background": true}
	cssRE   = regexp.MustCompile(`(?i)url\(\s*["']?([^"')\s]*)|@import\s+(?:url\()?\s*["']?([^"')\s;]*)`)
)

// externalRefs returns the references in page that are not fragments
// ("#s1") or data: URLs: anything a browser would fetch from the network
// or the disk.
func externalRefs(page string) []string {
	var out []string
	check := func(ref, context string) {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "#") || strings.HasPrefix(strings.ToLower(ref), "data:") {
			return
		}
		out = append(out, context)
	}
	for _, tag := range tagRE.FindAllString(page, -1) {
		body := strings.TrimSuffix(tag[1:], ">")
		body = body[strings.IndexAny(body+" ", " \t\n/"):] // skip the tag name
		for _, m := range attrRE.FindAllStringSubmatch(body, -1) {
			switch name, value := strings.ToLower(m[1]), m[2]+m[3]+m[4]; {
			case urlAttr[name]:
				check(value, m[0])
			case name == "style":
				for _, c := range cssRE.FindAllStringSubmatch(value, -1) {
					check(c[1]+c[2], c[0])
				}
			}
		}
	}
	for _, st := range styleRE.FindAllStringSubmatch(page, -1) {
		for _, m := range cssRE.FindAllStringSubmatch(st[1], -1) {
			check(m[1]+m[2], m[0])
		}
	}
	return out
}

func TestExternalRefsDetector(t *testing.T) {
	bad := `<style>@import url(https://x/a.css); @import "//x/b.css"; body{background:url('http://x/c.png')}</style>` +
		`<img src="https://x/d.png"><link href="//x/e.css"><svg><image xlink:href="f.png"/></svg><a href="#ok">ok</a>` +
		`<img src="data:image/png;base64,AA"><p style="background:url(g.png)" title="url(not-fetched) src=x">text: src=&#34;https://not/fetched&#34; url(text)</p>`
	got := externalRefs(bad)
	if len(got) != 7 {
		t.Errorf("externalRefs found %d references %q, want 7", len(got), got)
	}
}

// hostileDoc puts markup in every text field.
func hostileDoc() *Document {
	x := `<script>alert(1)</script><img src="https://evil.example/x.png">&amp;`
	return &Document{
		Title: "T " + x, Subtitle: x, Version: x, Summary: x,
		CommandLine: []string{"collsim", x},
		Verdict:     &Verdict{Status: StatusPass, Label: x, Detail: x},
		Inputs:      []KV{{x, x}},
		Assumptions: []Assumption{{x, x, x}},
		Sections: []Section{{Title: x, Blocks: []Block{
			Paragraph{Text: x},
			Code{Caption: x, Text: x},
			Table{Caption: x, Columns: []string{x}, Rows: [][]string{{x}}, Notes: []string{x}},
			Findings{{Severity: SeverityCritical, Title: x, Evidence: x, Fix: x}},
			Verdict{Status: StatusFail, Label: x},
			BarPlot{Title: x, Caption: x, ValueLabel: x, Categories: []string{x}, Series: []BarSeries{{Name: x, Values: []float64{1}}}},
		}}},
	}
}

func TestHTMLSelfContained(t *testing.T) {
	docs := fixtures()
	docs = append(docs, struct {
		name string
		doc  *Document
	}{"hostile", hostileDoc()})
	for _, fx := range docs {
		t.Run(fx.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, fx.doc); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			if refs := externalRefs(page); len(refs) > 0 {
				t.Errorf("page references external resources: %q", refs)
			}
			bads := []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "@font-face"}
			if fx.name != "hostile" { // whose text mentions a URL, escaped
				bads = append(bads, "http://", "https://")
			}
			for _, bad := range bads {
				if strings.Contains(strings.ToLower(page), bad) {
					t.Errorf("page contains %q", bad)
				}
			}
		})
	}
}

func TestHTMLEscaping(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, hostileDoc()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("escaped text missing")
	}
	// The plot title reaches the SVG text, the aria-label and the data
	// summary, escaped in each.
	if !strings.Contains(page, `aria-label="&lt;script&gt;`) {
		t.Error("aria-label not escaped")
	}
	if !strings.Contains(page, `>&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=&#34;https://evil.example/x.png&#34;&gt;&amp;amp;</text>`) {
		t.Error("SVG text not escaped")
	}
}

func TestHTMLStructure(t *testing.T) {
	var buf bytes.Buffer
	d := fixtureValidation()
	if err := WriteHTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	plots := 0
	for _, s := range d.Sections {
		for _, b := range s.Blocks {
			if _, ok := b.(Plot); ok {
				plots++
			}
		}
	}
	checks := []struct {
		what string
		ok   bool
	}{
		{"doctype first", strings.HasPrefix(page, "<!DOCTYPE html>\n")},
		{"viewport meta", strings.Contains(page, `<meta name="viewport" content="width=device-width, initial-scale=1">`)},
		{"CSP forbids fetching", strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`)},
		{"print styles", strings.Contains(page, "@media print{")},
		{"no page breaks in figures", strings.Contains(page, "figure,table,.finding,pre,.verdict,.summary{break-inside:avoid")},
		{"scaling SVG", strings.Contains(page, "svg.plot{display:block;width:100%;height:auto}")},
		{"SVG capped near natural size", strings.Contains(page, `<svg class="plot" viewBox="0 0 540 352.4" style="max-width:1044px" role="img"`)},
		{"one figure per plot", strings.Count(page, "<figure ") == plots},
		{"one data table per plot", strings.Count(page, "<details>") == plots},
		{"every table scrolls in a wrapper", strings.Count(page, "<table>") == strings.Count(page, `<div class="tw"><table>`)},
		{"fail badge", strings.Contains(page, `<div class="verdict v-fail"><span class="badge">FAIL</span>`)},
		{"critical finding", strings.Contains(page, `<li class="finding f-critical">`)},
		{"shell-quoted command", strings.Contains(page, "collsim validate --cluster &#39;dgx h100.yaml&#39; --report out.html")},
		{"contents for 3 sections", strings.Contains(page, `<li><a href="#s3">Raw results</a></li>`)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("HTML: %s: no", c.what)
		}
	}
}

// badDocs are documents that must not render, with the error they give.
func badDocs() []struct {
	name string
	doc  *Document
	want string
} {
	sec := func(b ...Block) *Document {
		return &Document{Title: "t", Sections: []Section{{Title: "s", Blocks: b}}}
	}
	return []struct {
		name string
		doc  *Document
		want string
	}{
		{"nil", nil, "reports: nil document"},
		{"no title", &Document{}, "reports: document has no title"},
		{"section title", &Document{Title: "t", Sections: []Section{{}}}, "section 1 has no title"},
		{"nil block", sec(nil), "block 1: nil block"},
		{"nil pointer block", sec((*Table)(nil)), "nil *reports.Table block"},
		{"long row", sec(Table{Columns: []string{"a"}, Rows: [][]string{{"1", "2"}}}), "row 1 has 2 cells for 1 columns"},
		{"no columns", sec(Table{Caption: "c"}), `table "c": no columns`},
		{"bad align", sec(Table{Columns: []string{"a"}, Align: []Align{7}}), "invalid alignment 7"},
		{"bad severity", sec(Findings{{Severity: 5, Title: "x"}}), "finding 1: invalid severity 5"},
		{"finding title", sec(Findings{{}}), "finding 1: no title"},
		{"bad status", &Document{Title: "t", Verdict: &Verdict{Status: 9}}, "document verdict: invalid status 9"},
		{"bad plot", sec(Paragraph{}, TimePlot{Title: "p"}), `section 1 ("s") block 2: time plot "p": no series`},
	}
}

func TestRenderErrors(t *testing.T) {
	for _, tt := range badDocs() {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteHTML(&buf, tt.doc)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "reports: ") {
				t.Errorf("WriteHTML error %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteHTML wrote %d bytes on error", buf.Len())
			}
			buf.Reset()
			dir := t.TempDir()
			err = WriteMarkdown(&buf, tt.doc, dir, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteMarkdown error %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteMarkdown wrote %d bytes on error", buf.Len())
			}
			if files := listDir(t, dir); len(files) != 0 {
				t.Errorf("WriteMarkdown left files %q on error", files)
			}
		})
	}
}

type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

// Write accepts n bytes in all, then fails.
func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	k := w.n
	w.n = 0
	return k, errDiskFull
}

func TestWriteHTMLWriterError(t *testing.T) {
	err := WriteHTML(&failWriter{n: 100}, fixtureMinimal())
	if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "reports: writing HTML: ") {
		t.Errorf("error %v, want a reports: error wrapping %v", err, errDiskFull)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"collsim", "predict", "--size=1G"}, "collsim predict --size=1G"},
		{[]string{"a b", "", "it's", "$HOME"}, `'a b' '' 'it'\''s' '$HOME'`},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.args); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestTableAlignments(t *testing.T) {
	tab := Table{
		Columns: []string{"name", "busbw", "gap", "mixed", "forced", "empty"},
		Rows:    [][]string{{"a", "1.5", "-3%", "1", "2", ""}, {"b", "n/a", "+4%", "x"}},
		Align:   []Align{AlignAuto, AlignAuto, AlignAuto, AlignAuto, AlignCenter},
	}
	got := tab.alignments()
	want := []Align{AlignLeft, AlignRight, AlignRight, AlignLeft, AlignCenter, AlignLeft}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %q: %v, want %v", tab.Columns[i], got[i], want[i])
		}
	}
}
