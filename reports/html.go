package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteHTML renders d as one self-contained HTML5 file: inline CSS, plots as
// inline SVG, every plot followed by the table of its numbers (in a
// <details> element), no scripts and nothing fetched from anywhere (a
// Content-Security-Policy forbids it as well). The page reads on a phone
// (fluid width, tables scroll sideways inside their box) and prints cleanly.
// All text is escaped. It validates d first and writes nothing when d is
// invalid or a plot fails to render; an error from w is returned wrapped.
// The same Document gives byte-identical output.
func WriteHTML(w io.Writer, d *Document) error {
	b, err := renderHTML(d)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("reports: writing HTML: %w", err)
	}
	return nil
}

// renderHTML renders d into memory.
func renderHTML(d *Document) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	v, err := newHTMLView(d)
	if err != nil {
		return nil, err
	}
	t, err := template.New("report").Parse(htmlTemplate)
	if err != nil {
		return nil, fmt.Errorf("reports: parsing HTML template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("reports: executing HTML template: %w", err)
	}
	return buf.Bytes(), nil
}

type htmlView struct {
	Title, Subtitle, Date, Version, Command string
	Summary                                 []string
	Verdict                                 *htmlVerdict
	Inputs                                  []KV
	Assumptions, OtherAssumptions           []Assumption
	OtherLabel                              string
	Sections                                []htmlSection
	TOC                                     bool
}

type htmlSection struct {
	ID, Title string
	Blocks    []htmlBlock
}

// htmlBlock is one rendered block; exactly one field is set.
type htmlBlock struct {
	Paragraphs []string
	Code       *Code
	Table      *htmlTable
	Figure     *htmlFigure
	Findings   []htmlFinding
	Verdict    *htmlVerdict
}

type htmlTable struct {
	// Wide marks a table of many columns, set tighter so that it fits.
	Wide    bool
	Caption string
	Head    []htmlCell
	Rows    [][]htmlCell
	Notes   []string
}

type htmlCell struct {
	Text, Class string
}

type htmlFigure struct {
	ID, Title, Caption string
	SVG                template.HTML
	Data               *htmlTable
}

type htmlFinding struct {
	Class, Severity, Title, Evidence, Fix string
}

type htmlVerdict struct {
	Class, Badge, Label, Detail string
}

func newHTMLVerdict(v Verdict) *htmlVerdict {
	return &htmlVerdict{
		Class:  "v-" + strings.ToLower(v.Status.String()),
		Badge:  v.Status.String(),
		Label:  v.Label,
		Detail: v.Detail,
	}
}

func newHTMLTable(t Table) *htmlTable {
	al := t.alignments()
	class := func(c int) string {
		switch al[c] {
		case AlignRight:
			return "r"
		case AlignCenter:
			return "c"
		}
		return ""
	}
	ht := &htmlTable{Caption: t.Caption, Notes: t.Notes, Wide: len(t.Columns) >= wideTable}
	for c, h := range t.Columns {
		ht.Head = append(ht.Head, htmlCell{h, class(c)})
	}
	for r := range t.Rows {
		row := make([]htmlCell, len(t.Columns))
		for c := range t.Columns {
			row[c] = htmlCell{t.cell(r, c), class(c)}
			if class(c) == "" && longWord(row[c].Text) {
				// may break inside its long words, so the table fits
				row[c].Class = "b"
			}
		}
		ht.Rows = append(ht.Rows, row)
	}
	return ht
}

func newHTMLView(d *Document) (*htmlView, error) {
	v := &htmlView{
		Title:       d.Title,
		Subtitle:    d.Subtitle,
		Date:        formatDate(d.Date),
		Version:     d.Version,
		Command:     shellQuote(d.CommandLine),
		Summary:     paragraphs(d.Summary),
		Inputs:      d.Inputs,
		Assumptions: d.Assumptions,
		TOC:         len(d.Sections) >= 3,
	}
	if len(d.OtherAssumptions) > 0 {
		v.OtherAssumptions = d.OtherAssumptions
		v.OtherLabel = otherAssumptionsLabel(len(d.OtherAssumptions))
	}
	if d.Verdict != nil {
		v.Verdict = newHTMLVerdict(*d.Verdict)
	}
	fig := 0
	pal := newPalette()
	for i, s := range d.Sections {
		hs := htmlSection{ID: "s" + strconv.Itoa(i+1), Title: s.Title}
		for j, b := range s.Blocks {
			b, err := deref(b)
			if err != nil {
				return nil, fmt.Errorf("reports: section %d (%q) block %d: %w", i+1, s.Title, j+1, err)
			}
			var hb htmlBlock
			switch b := b.(type) {
			case Paragraph:
				hb.Paragraphs = paragraphs(b.Text)
			case Code:
				c := b
				hb.Code = &c
			case Table:
				hb.Table = newHTMLTable(b)
			case Findings:
				for _, f := range b {
					hb.Findings = append(hb.Findings, htmlFinding{
						Class: "f-" + f.Severity.String(), Severity: f.Severity.String(),
						Title: f.Title, Evidence: f.Evidence, Fix: f.Fix,
					})
				}
			case Verdict:
				hb.Verdict = newHTMLVerdict(b)
			case Plot:
				fig++
				svg, err := renderPlot(b, pal)
				if err != nil {
					return nil, fmt.Errorf("reports: section %d (%q) block %d: %w", i+1, s.Title, j+1, err)
				}
				inline, err := inlineSVG(svg, b.PlotTitle())
				if err != nil {
					return nil, err
				}
				hb.Figure = &htmlFigure{
					ID:      "fig" + strconv.Itoa(fig),
					Title:   b.PlotTitle(),
					Caption: b.PlotCaption(),
					SVG:     template.HTML(inline), // produced by vgsvg, which escapes all text
					Data:    newHTMLTable(b.DataTable()),
				}
			default:
				return nil, fmt.Errorf("reports: section %d (%q) block %d: unsupported block type %T", i+1, s.Title, j+1, b)
			}
			hs.Blocks = append(hs.Blocks, hb)
		}
		v.Sections = append(v.Sections, hs)
	}
	return v, nil
}

// wideTable is the column count from which a table is set tighter.
const wideTable = 10

// longWord reports whether s has a word (a run without spaces) longer than
// 16 characters, such as a link name ("node2/nic0->fabric/switch"), which
// would otherwise widen its column past the page.
func longWord(s string) bool {
	for _, w := range strings.Fields(s) {
		if utf8.RuneCountInString(w) > 16 {
			return true
		}
	}
	return false
}

// htmlCSS is the whole stylesheet. System font stacks only; no url().
const htmlCSS = `
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--pass:#1a7f37;--warn:#9a6700;--fail:#cf222e;--info:#0969da}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;color:var(--fg);background:#fff;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:72rem;margin:0 auto;padding:1rem 1.25rem 3rem}
h1{font-size:1.75rem;line-height:1.25;margin:.5rem 0 .25rem}
h2{font-size:1.35rem;margin:2rem 0 .75rem;padding-bottom:.25rem;border-bottom:1px solid var(--line)}
h3{font-size:1.05rem;margin:1.25rem 0 .5rem}
p{margin:.5rem 0}
.subtitle{font-size:1.15rem;color:var(--muted);margin:0}
.meta{color:var(--muted);font-size:.9rem}
.summary{border:1px solid var(--line);border-radius:6px;padding:.75rem 1rem;margin:1rem 0;background:var(--soft)}
.summary h2{margin-top:0;border:0;font-size:1.1rem}
.verdict{display:flex;flex-wrap:wrap;align-items:baseline;gap:.5rem;margin:.5rem 0}
.badge{display:inline-block;min-width:3.5rem;text-align:center;font-weight:700;font-size:.85rem;letter-spacing:.05em;padding:.15rem .5rem;border-radius:4px;color:#fff;border:2px solid transparent}
.v-pass .badge{background:var(--pass);border-color:var(--pass)}
.v-warn .badge{background:var(--warn);border-color:var(--warn)}
.v-fail .badge{background:var(--fail);border-color:var(--fail)}
.v-info .badge{background:var(--info);border-color:var(--info)}
.verdict .label{font-weight:600}
.verdict .detail{flex-basis:100%;margin:0;color:var(--muted)}
nav ol{margin:.25rem 0;padding-left:1.5rem}
.tw{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0;max-width:100%}
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid var(--line);padding:.3rem .6rem;vertical-align:top}
td.b{overflow-wrap:anywhere;min-width:5rem}
td.r{white-space:nowrap}
table.wide{font-size:.8rem}
table.wide th,table.wide td{padding:.25rem .4rem}
table.wide td.r{white-space:normal}
table.wrap{width:100%}
th{background:var(--soft);text-align:left}
td.r,th.r{text-align:right}
td.c,th.c{text-align:center}
.notes{font-size:.85rem;color:var(--muted);margin:.25rem 0 1rem;padding-left:1.25rem}
figure{margin:1.25rem 0;padding:0}
svg.plot{display:block;width:100%;height:auto}
figcaption{font-size:.9rem;color:var(--muted);margin:.25rem 0}
details{margin:.25rem 0 1rem}
summary{cursor:pointer;color:var(--info);font-size:.9rem}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem;overflow-x:auto;font-size:.85rem;line-height:1.4}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
.code-caption{font-weight:600;margin-bottom:.25rem}
.findings{list-style:none;padding:0;margin:.5rem 0}
.finding{border:1px solid var(--line);border-left:6px solid var(--info);border-radius:4px;padding:.5rem .75rem;margin:.5rem 0}
.f-warning{border-left-color:var(--warn)}
.f-critical{border-left-color:var(--fail)}
.finding .sev{text-transform:uppercase;font-size:.75rem;font-weight:700;letter-spacing:.05em;color:var(--muted)}
.finding .title{font-weight:600;margin:.1rem 0}
.finding p{margin:.2rem 0}
.finding,.verdict .label,.summary p,figcaption,li{overflow-wrap:anywhere}
footer{margin-top:2.5rem;border-top:1px solid var(--line);padding-top:.5rem;color:var(--muted);font-size:.85rem}
@media (max-width:40rem){body{font-size:15px}main{padding:.75rem .6rem 2rem}h1{font-size:1.4rem}}
@media print{
*{background:transparent!important;box-shadow:none!important}
body{font-size:11pt;color:#000}
main{max-width:none;padding:0}
a{color:#000;text-decoration:none}
nav{display:none}
.badge{color:#000!important;border-color:#000!important}
.summary,.finding,pre{border-color:#888}
figure,table,.finding,pre,.verdict,.summary{break-inside:avoid;page-break-inside:avoid}
h2,h3{break-after:avoid;page-break-after:avoid}
.tw{overflow:visible}
svg.plot{max-width:100%}
details>summary{display:none}
details::details-content{display:contents;content-visibility:visible}
}
`

const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="color-scheme" content="light">
<meta name="generator" content="collsim{{with .Version}} {{.}}{{end}}">
<title>{{.Title}}</title>
<style>` + htmlCSS + `</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{- with .Subtitle}}
<p class="subtitle">{{.}}</p>
{{- end}}
{{- if or .Date .Version}}
<p class="meta">{{with .Date}}Generated {{.}}{{end}}{{if and .Date .Version}} · {{end}}{{with .Version}}collsim {{.}}{{end}}</p>
{{- end}}
</header>
{{- if or .Verdict .Summary}}
<section class="summary" aria-label="Summary">
<h2>Summary</h2>
{{- with .Verdict}}{{template "verdict" .}}{{end}}
{{- range .Summary}}
<p>{{.}}</p>
{{- end}}
</section>
{{- end}}
{{- if .TOC}}
<nav aria-label="Contents">
<h2>Contents</h2>
<ol>
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{- end}}
</ol>
</nav>
{{- end}}
{{- if .Inputs}}
<section id="inputs">
<h2>Inputs</h2>
<div class="tw"><table>
<thead><tr><th>Input</th><th>Value</th></tr></thead>
<tbody>
{{- range .Inputs}}
<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{- end}}
</tbody>
</table></div>
</section>
{{- end}}
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{- range .Blocks}}
{{- if .Paragraphs}}{{range .Paragraphs}}
<p>{{.}}</p>
{{- end}}{{end}}
{{- with .Code}}
<div class="code">
{{- with .Caption}}
<div class="code-caption">{{.}}</div>
{{- end}}
<pre><code>{{.Text}}</code></pre>
</div>
{{- end}}
{{- with .Table}}{{template "table" .}}{{end}}
{{- with .Figure}}
<figure id="{{.ID}}">
{{.SVG}}
{{- with .Caption}}
<figcaption>{{.}}</figcaption>
{{- end}}
</figure>
<details>
<summary>Data behind “{{.Title}}”</summary>
{{- template "table" .Data}}
</details>
{{- end}}
{{- if .Findings}}
<ul class="findings">
{{- range .Findings}}
<li class="finding {{.Class}}">
<div class="sev">{{.Severity}}</div>
<p class="title">{{.Title}}</p>
{{- with .Evidence}}
<p><strong>Evidence:</strong> {{.}}</p>
{{- end}}
{{- with .Fix}}
<p><strong>Fix:</strong> {{.}}</p>
{{- end}}
</li>
{{- end}}
</ul>
{{- end}}
{{- with .Verdict}}{{template "verdict" .}}{{end}}
{{- end}}
</section>
{{- end}}
{{- if or .Assumptions .OtherAssumptions}}
<section id="assumptions">
<h2>Assumptions</h2>
{{- with .Assumptions}}{{template "assumptions" .}}{{end}}
{{- with .OtherAssumptions}}
<details>
<summary>{{$.OtherLabel}}</summary>
{{- template "assumptions" .}}
</details>
{{- end}}
</section>
{{- end}}
<footer>
{{- with .Command}}
<p>Reproduce with:</p>
<pre><code>{{.}}</code></pre>
{{- end}}
<p>Made by collsim{{with .Version}} {{.}}{{end}}{{with .Date}} on {{.}}{{end}}. Self-contained: this file loads nothing from the network.</p>
</footer>
</main>
</body>
</html>
{{define "verdict"}}
<div class="verdict {{.Class}}"><span class="badge">{{.Badge}}</span> <span class="label">{{.Label}}</span>
{{- with .Detail}}<p class="detail">{{.}}</p>{{end}}</div>
{{- end}}
{{define "assumptions"}}
<div class="tw"><table class="wrap">
<thead><tr><th>Term</th><th>Value</th><th>Source</th></tr></thead>
<tbody>
{{- range .}}
<tr><td>{{.Term}}</td><td>{{.Value}}</td><td>{{.Source}}</td></tr>
{{- end}}
</tbody>
</table></div>
{{- end -}}
{{define "table"}}
<div class="tw"><table{{if .Wide}} class="wide"{{end}}>
{{- with .Caption}}
<caption>{{.}}</caption>
{{- end}}
<thead><tr>{{range .Head}}<th{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{with .Class}} class="{{.}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- with .Notes}}
<ul class="notes">
{{- range .}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
{{- end}}
`
