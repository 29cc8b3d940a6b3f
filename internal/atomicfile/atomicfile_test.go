package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var errDiskFull = errors.New("disk full (test)")

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWrite: the file holds the data, has exactly the requested mode
// (whatever the umask and the temporary file's 0600), replaces an older file
// and leaves no temporary file.
func TestWrite(t *testing.T) {
	for _, perm := range []fs.FileMode{0o644, 0o600} {
		t.Run(perm.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.json")
			if err := os.WriteFile(path, []byte("old, and longer than the new"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := Write(path, []byte("new"), perm); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, path); got != "new" {
				t.Errorf("content %q, want %q", got, "new")
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != perm {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), perm)
			}
			if files := listDir(t, dir); !slices.Equal(files, []string{"out.json"}) {
				t.Errorf("directory holds %q, want only out.json", files)
			}
		})
	}
}

// TestWriteRelative: a bare file name is written in the working directory.
func TestWriteRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := Write("out.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(dir, "out.txt")); got != "x" {
		t.Errorf("content %q, want %q", got, "x")
	}
}

// TestWriteFuncFailsMidway: a writer that fails half-way (past the buffer)
// leaves the old file as it was and no temporary file, and the error wraps
// the writer's.
func TestWriteFuncFailsMidway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFunc(path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("x"), 10000)); err != nil {
			return err
		}
		return errDiskFull
	})
	if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "writing "+path+": ") {
		t.Errorf("error %v, want one naming %s and wrapping %v", err, path, errDiskFull)
	}
	if got := mustRead(t, path); got != "old report" {
		t.Errorf("old report replaced by %.20q", got)
	}
	if files := listDir(t, dir); !slices.Equal(files, []string{"report.html"}) {
		t.Errorf("directory holds %q, want only report.html", files)
	}
}

// TestWriteFails: a rename onto a directory (after the data is written)
// and a missing directory are errors that leave nothing behind.
func TestWriteFails(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub.html")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(sub, []byte("x"), 0o644); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if files := listDir(t, dir); !slices.Equal(files, []string{"sub.html"}) {
		t.Errorf("directory holds %q after a failed rename", files)
	}
	missing := filepath.Join(dir, "missing", "r.html")
	if err := Write(missing, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("writing into a missing directory: error %v, want one naming %s", err, missing)
	}
}
