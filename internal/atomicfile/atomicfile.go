// Package atomicfile writes whole files so that a reader, or a crash, sees
// either the old file or the complete new one, never part of one.
//
// It is the one implementation behind calibrate.WriteFileAtomic,
// hwbench.WriteFileAtomic and the report files of package reports; it
// imports only the standard library so that all three can use it without
// importing each other. Errors carry no package prefix: callers wrap them
// with their own.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Write writes data to path atomically with permission bits perm (see
// WriteFunc).
func Write(path string, data []byte, perm fs.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes what write produces to path: into a temporary file
// ".<base>.tmp-*" in the same directory (through a buffer), then flush,
// fsync, chmod to perm (not reduced by the umask), close, rename over path,
// and fsync the directory (except on Windows, where directories cannot be
// synced). On any error before the rename the temporary file is removed and
// path is untouched; an error syncing the directory after the rename says
// that path was written. The directory must exist.
//
// Errors name path and the step that failed ("writing PATH: ...",
// "syncing PATH: ...") and wrap the underlying error, including the one
// write returns.
func WriteFunc(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, closed, renamed := f.Name(), false, false
	defer func() {
		if err == nil || renamed {
			return
		}
		if !closed {
			_ = f.Close() // the write already failed; its error is the one to report
		}
		if rerr := os.Remove(tmp); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing temporary file: %w", rerr))
		}
	}()
	bw := bufio.NewWriter(f)
	if err = write(bw); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	renamed = true
	if runtime.GOOS != "windows" {
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("%s written; syncing its directory: %w", path, err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
