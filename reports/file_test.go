package reports

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listDir returns the names of the files in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// snapshot returns the contents of every file in dir by name.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range listDir(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileFormats(t *testing.T) {
	dir := t.TempDir()
	d := fixtureSweep()
	var html, md bytes.Buffer
	if err := WriteHTML(&html, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, d, t.TempDir(), "report-"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		want string
	}{
		{"report.html", html.String()},
		{"REPORT.HTM", html.String()},
		{"report.md", md.String()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if err := WriteFile(path, d); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, path); got != tt.want {
				t.Errorf("%s differs from the writer output", tt.file)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", info.Mode().Perm())
			}
		})
	}
	// The Markdown's figures lie beside it, named after it.
	var figs []string
	for _, n := range listDir(t, dir) {
		if strings.HasSuffix(n, ".svg") {
			figs = append(figs, n)
			if !strings.HasPrefix(n, "report-fig0") {
				t.Errorf("figure %q not named after the report", n)
			}
		}
	}
	if len(figs) != 4 {
		t.Errorf("figures %q, want 4", figs)
	}
	for _, bad := range []string{"report.pdf", "report", "report.markdown"} {
		err := WriteFile(filepath.Join(dir, bad), d)
		if err == nil || !strings.Contains(err.Error(), "(known: .html, .htm, .md)") {
			t.Errorf("WriteFile(%s) error %v, want one listing the known extensions", bad, err)
		}
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.html"), d); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// TestWriteAtomicFailsMidway: a writer that fails half-way leaves the old
// file as it was and no temporary file.
func TestWriteAtomicFailsMidway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := writeAtomicFunc(path, func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("x"), 10000)); err != nil {
			return err
		}
		return errDiskFull
	})
	if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "reports: writing ") {
		t.Errorf("error %v, want a reports: error wrapping %v", err, errDiskFull)
	}
	if got := mustRead(t, path); got != "old report" {
		t.Errorf("old report replaced by %.20q", got)
	}
	if files := listDir(t, dir); !slices.Equal(files, []string{"report.html"}) {
		t.Errorf("directory holds %q, want only report.html", files)
	}
	// Rename onto a directory fails after the data is written: same result.
	sub := filepath.Join(dir, "sub.html")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(sub, []byte("x")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if files := listDir(t, dir); !slices.Equal(files, []string{"report.html", "sub.html"}) {
		t.Errorf("directory holds %q after a failed rename", files)
	}
}

// TestWriteFileBadPlotKeepsOld: a document whose plot cannot render leaves
// an existing report (and its figures) exactly as they were.
func TestWriteFileBadPlotKeepsOld(t *testing.T) {
	for _, name := range []string{"r.html", "r.md"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if err := WriteFile(path, fixtureValidation()); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			bad := fixtureValidation()
			bad.Sections[0].Blocks = append(bad.Sections[0].Blocks, BusBWPlot{Title: "broken", Series: []BWSeries{{Name: "m", Points: []BWPoint{{Size: 0, BusBW: 1}}}}})
			err := WriteFile(path, bad)
			if err == nil || !strings.Contains(err.Error(), `busbw plot "broken"`) {
				t.Fatalf("error %v, want one naming the broken plot", err)
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("directory changed: %q -> %q", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// TestWriteFileMarkdownOrder: figures are written before the Markdown; if
// the Markdown cannot be written, the old report still shows its own
// figures (new ones have new names and are removed again), and the next successful write removes
// the figures nobody refers to.
func TestWriteFileMarkdownOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	if err := WriteFile(path, fixtureSweep()); err != nil {
		t.Fatal(err)
	}
	oldMD := mustRead(t, path)
	oldFigs := snapshot(t, dir)
	delete(oldFigs, "r.md")

	changed := fixtureSweep()
	changed.Sections[0].Blocks[0] = ParetoPlot{Title: "Cost against AllReduce throughput", Points: fixturePareto().Points[:3], Frontier: []int{2, 0}}
	var order []string
	failMD := func(p string, data []byte) error {
		order = append(order, filepath.Base(p))
		if strings.HasSuffix(p, ".md") {
			return errDiskFull
		}
		return writeAtomic(p, data)
	}
	if err := writeFile(path, changed, failMD); !errors.Is(err, errDiskFull) {
		t.Fatalf("error %v, want %v", err, errDiskFull)
	}
	if last := order[len(order)-1]; last != "r.md" || len(order) != 5 {
		t.Errorf("write order %q, want 4 figures then r.md", order)
	}
	if got := mustRead(t, path); got != oldMD {
		t.Error("old Markdown changed")
	}
	for name, data := range oldFigs {
		if got := mustRead(t, filepath.Join(dir, name)); got != data {
			t.Errorf("old figure %s changed", name)
		}
	}
	if got := listDir(t, dir); len(got) != 1+4 {
		t.Errorf("files %q after the failed write, want the old 5: the new figure is removed", got)
	}

	// A successful write removes figures of earlier versions, and only
	// those: not another file, not another report's figures, also not
	// those of a report whose name extends this one's ("r-fig01-x.md",
	// whose figures "r-fig01-x-fig01-...svg" this one's pattern matches).
	keep := filepath.Join(dir, "r-fig01-notes.txt")
	other := filepath.Join(dir, "other-fig01-x-0123abcd.svg")
	for _, p := range []string{keep, other} {
		if err := os.WriteFile(p, []byte("unrelated"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	longer := filepath.Join(dir, "r-fig01-x.md")
	if err := WriteFile(longer, fixtureSweep()); err != nil {
		t.Fatal(err)
	}
	longerFigs := mdLinkRE.FindAllStringSubmatch(mustRead(t, longer), -1)
	if err := WriteFile(path, changed); err != nil {
		t.Fatal(err)
	}
	linked := mdLinkRE.FindAllStringSubmatch(mustRead(t, path), -1)
	want := []string{"other-fig01-x-0123abcd.svg", "r-fig01-notes.txt", "r.md", "r-fig01-x.md"}
	for _, m := range longerFigs {
		want = append(want, m[1])
	}
	for _, m := range linked {
		want = append(want, m[1])
	}
	slices.Sort(want)
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// TestWriteFileMarkdownFailsLeavesNothing: a first Markdown report whose
// .md cannot be written leaves no figure behind.
func TestWriteFileMarkdownFailsLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	figs := 0
	failMD := func(p string, data []byte) error {
		if strings.HasSuffix(p, ".md") {
			return errDiskFull
		}
		figs++
		return writeAtomic(p, data)
	}
	if err := writeFile(path, fixtureSweep(), failMD); !errors.Is(err, errDiskFull) {
		t.Fatalf("error %v, want %v", err, errDiskFull)
	}
	if figs == 0 {
		t.Fatal("no figure was written before the Markdown: the test shows nothing")
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("files %q after the failed write, want none", got)
	}
}
