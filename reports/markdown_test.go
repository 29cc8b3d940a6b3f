package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestMarkdownEscape(t *testing.T) {
	tests := []struct {
		in, line, cell string
	}{
		{"plain text, 1.5 GB/s", "plain text, 1.5 GB/s", "plain text, 1.5 GB/s"},
		{"*bold* _em_ `code` [link](x) <b>", `\*bold\* \_em\_ \` + "`code\\`" + ` \[link](x) \<b>`, `\*bold\* \_em\_ \` + "`code\\`" + ` \[link](x) \<b>`},
		{"all_reduce_perf", "all_reduce_perf", "all_reduce_perf"},
		{"# heading", `\# heading`, "# heading"},
		{"- item", `\- item`, "- item"},
		{"-15.0%", "-15.0%", "-15.0%"},
		{"---", `\---`, "---"},
		{"+ item", `\+ item`, "+ item"},
		{"1. first", `1\. first`, "1. first"},
		{"0.92", "0.92", "0.92"},
		{"> quote", `\> quote`, "> quote"},
		{"a | b", "a | b", `a \| b`},
		{"$5 and $6", `\$5 and \$6`, `\$5 and \$6`},
		{"&amp; & x", `\&amp; & x`, `\&amp; & x`},
		{`src \ dst, a\*b, end\`, `src \ dst, a\\\*b, end\\`, `src \ dst, a\\\*b, end\\`},
		{"~~gone~~", `\~\~gone\~\~`, `\~\~gone\~\~`},
	}
	for _, tt := range tests {
		if got := mdEscapeLine(tt.in); got != tt.line {
			t.Errorf("mdEscapeLine(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := mdCell(tt.in); got != tt.cell {
			t.Errorf("mdCell(%q) = %q, want %q", tt.in, got, tt.cell)
		}
	}
	if got, want := mdCell("two\nlines"), "two<br>lines"; got != want {
		t.Errorf("mdCell multi-line = %q, want %q", got, want)
	}
	if got, want := codeFence("a ``` b ```` c"), "`````"; got != want {
		t.Errorf("codeFence = %q, want %q", got, want)
	}
}

var mdLinkRE = regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`)

func TestWriteMarkdownAssets(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	d := fixtureValidation()
	if err := WriteMarkdown(&buf, d, dir, "my report_files/r-"); err != nil {
		t.Fatal(err)
	}
	links := mdLinkRE.FindAllStringSubmatch(buf.String(), -1)
	if len(links) != 3 {
		t.Fatalf("%d image links, want 3", len(links))
	}
	titles := []string{"AllReduce busbw, 8x H100", "AllReduce time by algorithm", "P2P bandwidth (unidirectional)"}
	for i, m := range links {
		if !strings.HasPrefix(m[1], "my%20report_files/r-fig0") {
			t.Errorf("link %q is not escaped or lacks the prefix", m[1])
		}
		name := strings.ReplaceAll(m[1], "%20", " ")
		svg, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatalf("link %d: %v", i+1, err)
		}
		if !bytes.HasPrefix(svg, []byte("<?xml")) || !slices.Contains(svgTexts(string(svg)), titles[i]) {
			t.Errorf("%s is not the SVG of %q", name, titles[i])
		}
	}
	if files := listDir(t, filepath.Join(dir, "my report_files")); len(files) != 3 {
		t.Errorf("asset directory holds %q, want 3 files", files)
	}

	// No plots, no files.
	empty := t.TempDir()
	if err := WriteMarkdown(&buf, fixtureMinimal(), empty, ""); err != nil {
		t.Fatal(err)
	}
	if files := listDir(t, empty); len(files) != 0 {
		t.Errorf("minimal report wrote %q", files)
	}
}

func TestWriteMarkdownBadPrefix(t *testing.T) {
	for _, prefix := range []string{"../up-", "/abs/", `a\b`, "x/../../y"} {
		var buf bytes.Buffer
		err := WriteMarkdown(&buf, fixtureMinimal(), t.TempDir(), prefix)
		if err == nil || !strings.HasPrefix(err.Error(), "reports: asset prefix") {
			t.Errorf("prefix %q: error %v, want an asset prefix error", prefix, err)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"AllReduce busbw, 8x H100": "allreduce-busbw-8x-h100",
		"  ":                       "plot",
		"P2P (GB/s) → matrix":      "p2p-gb-s-matrix",
		strings.Repeat("abc ", 20): "abc-abc-abc-abc-abc-abc-abc-abc-abc-abc-a",
	}
	for in, want := range tests {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
