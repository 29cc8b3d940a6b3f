package reports

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/collsim/collsim/internal/atomicfile"
)

// WriteFile writes d to path as HTML (extension .html or .htm) or Markdown
// (.md), compared case-insensitively; any other extension is an error that
// lists the known ones.
//
// Writing is atomic: each file is written to a temporary file in the same
// directory, synced and renamed over the target, so a reader sees either the
// old report or the complete new one, and a failure (an invalid document, a
// plot that fails to render, a full disk) leaves any existing report as it
// was and no temporary file behind. Everything is rendered in memory before
// the first file is touched.
//
// For Markdown the plots are written beside the report as
// "<name>-figNN-<slug>-<hash>.svg" (see WriteMarkdown) before the .md file;
// because the names carry a hash of their content, the old report keeps
// pointing at its own pictures until the new .md replaces it. After that,
// figure files of an earlier version of the same report (same "<name>-fig"
// prefix, same naming pattern) that the new one does not use are removed.
// The directory must exist.
func WriteFile(path string, d *Document) error {
	return writeFile(path, d, writeAtomic)
}

// putFunc writes one whole file; writeAtomic in production, a failing
// stand-in in tests.
type putFunc func(path string, data []byte) error

func writeFile(path string, d *Document, put putFunc) error {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".html", ".htm":
		b, err := renderHTML(d)
		if err != nil {
			return err
		}
		return put(path, b)
	case ".md":
		stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		md, assets, err := renderMarkdown(d, stem+"-")
		if err != nil {
			return err
		}
		return putMarkdown(path, stem, md, assets, put)
	default:
		return fmt.Errorf("reports: %q: unknown report extension %q (known: .html, .htm, .md)", path, ext)
	}
}

// putMarkdown writes the figures, then the Markdown, then removes figures
// of an earlier version of the report that the new one does not use. When a
// figure or the Markdown cannot be written, the figures this call created
// are removed again, so a failed report leaves no SVG behind (figures that
// were there before belong to the old report and stay).
func putMarkdown(mdPath, stem string, md []byte, assets []asset, put putFunc) (err error) {
	dir := filepath.Dir(mdPath)
	keep := make(map[string]bool, len(assets))
	var created []string
	defer func() {
		if err == nil {
			return
		}
		for _, p := range created {
			if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("reports: removing %s: %w", p, rerr))
			}
		}
	}()
	for _, a := range assets {
		p := filepath.Join(dir, filepath.FromSlash(a.name))
		_, statErr := os.Lstat(p)
		if err := put(p, a.data); err != nil {
			return err
		}
		if errors.Is(statErr, os.ErrNotExist) {
			created = append(created, p)
		}
		keep[a.name] = true
	}
	if err := put(mdPath, md); err != nil {
		return err
	}
	created = nil
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reports: report written; listing %s for old figures: %w", dir, err)
	}
	old := regexp.MustCompile(`^` + regexp.QuoteMeta(stem) + `-fig[0-9]{2,}-[a-z0-9-]+-[0-9a-f]{8}\.svg$`)
	// Another report of this directory whose name extends this one's
	// ("a-fig01-x.md" beside "a.md") owns the figures named after it,
	// which the pattern of this report's would also match.
	var others []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".md") && strings.HasPrefix(n, stem+"-") {
			others = append(others, strings.TrimSuffix(n, ".md")+"-fig")
		}
	}
	ownedElsewhere := func(name string) bool {
		return slices.ContainsFunc(others, func(o string) bool { return strings.HasPrefix(name, o) })
	}
	var errs []error
	for _, e := range entries {
		if name := e.Name(); e.Type().IsRegular() && old.MatchString(name) && !keep[name] && !ownedElsewhere(name) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reports: report written; removing old figures: %w", err)
	}
	return nil
}

// writeAtomic writes data to path atomically with mode 0644 (see
// atomicfile.WriteFunc).
func writeAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// writeAtomicFunc writes what write produces to path atomically with mode
// 0644: a temporary file in the same directory, flushed, fsynced, chmodded,
// closed and renamed over path, then the directory fsynced. On any error the
// temporary file is removed and path is untouched (see atomicfile.WriteFunc).
func writeAtomicFunc(path string, write func(io.Writer) error) error {
	if err := atomicfile.WriteFunc(path, 0o644, write); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
