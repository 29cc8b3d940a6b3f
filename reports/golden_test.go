package reports

import (
	"bytes"
	"flag"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtures are the representative documents used by golden, determinism
// and browser tests.
func fixtures() []struct {
	name string
	doc  *Document
} {
	return []struct {
		name string
		doc  *Document
	}{
		{"validation", fixtureValidation()},
		{"sweep", fixtureSweep()},
		{"minimal", fixtureMinimal()},
		{"topology", fixtureTopologyDoc()},
	}
}

var (
	inlineSVGRE = regexp.MustCompile(`(?s)(<svg class="plot"[^>]*>).*?</svg>`)
	svgTextRE   = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)
)

// svgTexts returns the text drawn in an SVG, in document order, unescaped.
func svgTexts(svg string) []string {
	var out []string
	for _, m := range svgTextRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// summarizeSVGs replaces the body of every inline plot with the list of
// the texts it draws (title, axis labels, ticks, legend, annotations), so
// goldens show what a plot says without its geometry.
func summarizeSVGs(page string) string {
	return inlineSVGRE.ReplaceAllStringFunc(page, func(m string) string {
		head := inlineSVGRE.FindStringSubmatch(m)[1]
		return head + "[texts: " + strings.Join(svgTexts(m), " | ") + "]</svg>"
	})
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from golden at line %d:\n got: %.300q\nwant: %.300q\n(run with -update if the change is intended)", path, i+1, g, w)
			}
		}
	}
}

func TestHTMLGolden(t *testing.T) {
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHTML(&buf, fx.doc); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, fx.name+".html.golden", []byte(summarizeSVGs(buf.String())))
		})
	}
}

func TestMarkdownGolden(t *testing.T) {
	for _, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			dir := t.TempDir()
			var buf bytes.Buffer
			if err := WriteMarkdown(&buf, fx.doc, dir, "report-"); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, fx.name+".md.golden", buf.Bytes())
		})
	}
}

// TestDeterministic renders every fixture twice, from two separately built
// Documents, and requires byte-identical HTML, Markdown and figure files.
func TestDeterministic(t *testing.T) {
	for i, fx := range fixtures() {
		t.Run(fx.name, func(t *testing.T) {
			again := fixtures()[i].doc
			var h1, h2 bytes.Buffer
			if err := WriteHTML(&h1, fx.doc); err != nil {
				t.Fatal(err)
			}
			if err := WriteHTML(&h2, again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(h1.Bytes(), h2.Bytes()) {
				t.Error("HTML differs between two renders")
			}
			m1, a1, err := renderMarkdown(fx.doc, "r-")
			if err != nil {
				t.Fatal(err)
			}
			m2, a2, err := renderMarkdown(again, "r-")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m1, m2) {
				t.Error("Markdown differs between two renders")
			}
			if len(a1) != len(a2) {
				t.Fatalf("%d figures, then %d", len(a1), len(a2))
			}
			for k := range a1 {
				if a1[k].name != a2[k].name || !bytes.Equal(a1[k].data, a2[k].data) {
					t.Errorf("figure %d differs between two renders (%s, %s)", k+1, a1[k].name, a2[k].name)
				}
			}
		})
	}
}
