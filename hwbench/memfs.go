package hwbench

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// memFS is a read-only in-memory file tree with symbolic links: the /sys
// and /proc of a Fake. Directories are implied by the paths of the files
// and links under them. Open, ReadFile, ReadDir and Stat follow links
// (relative ones, at most maxLinks of them); ReadLink and Lstat do
// not follow the last element. It is built once and never changed, so it
// is safe for concurrent use.
type memFS struct {
	files map[string]memEntry
	// dirs maps each directory ("." is the root) to its sorted entries.
	dirs map[string][]string
}

// memEntry is a file's content or, for a link, its target.
type memEntry struct {
	data []byte
	link bool
}

// maxLinks bounds the links one lookup follows (Linux's MAXSYMLINKS).
const maxLinks = 40

// newMemFS builds the tree of files, whose keys are slash-separated paths
// without a leading slash.
func newMemFS(files map[string]memEntry) *memFS {
	m := &memFS{files: files, dirs: map[string][]string{".": nil}}
	seen := map[string]bool{}
	for name := range files {
		for p := name; p != "."; {
			dir := path.Dir(p)
			if !seen[p] {
				seen[p] = true
				m.dirs[dir] = append(m.dirs[dir], path.Base(p))
			}
			p = dir
		}
	}
	for name := range files {
		if _, isDir := m.dirs[name]; isDir {
			// A file that is also a parent: keep the directory view.
			delete(m.files, name)
		}
	}
	for d := range m.dirs {
		sort.Strings(m.dirs[d])
	}
	return m
}

// resolve returns the real path of name, following links in every element
// and, when followLast is set, in the last one too.
func (m *memFS) resolve(op, name string, followLast bool) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	links := 0
	rest := strings.Split(name, "/")
	cur := "."
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		if elem == "." || elem == "" {
			continue
		}
		if elem == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, elem)
		e, ok := m.files[next]
		if _, isDir := m.dirs[next]; !ok && !isDir {
			return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if ok && e.link && (len(rest) > 0 || followLast) {
			if links++; links > maxLinks {
				return "", &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
			}
			target := string(e.data)
			if strings.HasPrefix(target, "/") {
				// A file system path is relative to its root: an absolute
				// target leads nowhere (as in testing/fstest.MapFS).
				return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if ok && !e.link && len(rest) > 0 {
			return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		cur = next
	}
	return cur, nil
}

// info describes the entry at the real path p.
func (m *memFS) info(p string) fs.FileInfo {
	if e, ok := m.files[p]; ok {
		mode := fs.FileMode(0o444)
		if e.link {
			mode = fs.ModeSymlink | 0o777
		}
		return memInfo{name: path.Base(p), size: int64(len(e.data)), mode: mode}
	}
	return memInfo{name: path.Base(p), mode: fs.ModeDir | 0o555}
}

// Open implements fs.FS.
func (m *memFS) Open(name string) (fs.File, error) {
	p, err := m.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	f := &memFile{info: m.info(p)}
	if e, ok := m.files[p]; ok {
		f.r = strings.NewReader(string(e.data))
		return f, nil
	}
	if f.entries, err = m.ReadDir(name); err != nil {
		return nil, err
	}
	return f, nil
}

// ReadFile implements fs.ReadFileFS.
func (m *memFS) ReadFile(name string) ([]byte, error) {
	p, err := m.resolve("read", name, true)
	if err != nil {
		return nil, err
	}
	e, ok := m.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	return append([]byte(nil), e.data...), nil
}

// ReadDir implements fs.ReadDirFS: the entries sorted by name, links as
// links.
func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := m.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	names, isDir := m.dirs[p]
	if !isDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	out := make([]fs.DirEntry, len(names))
	for i, n := range names {
		out[i] = fs.FileInfoToDirEntry(m.info(path.Join(p, n)))
	}
	return out, nil
}

// Stat implements fs.StatFS.
func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	p, err := m.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return m.info(p), nil
}

// ReadLink implements fs.ReadLinkFS.
func (m *memFS) ReadLink(name string) (string, error) {
	p, err := m.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	e, ok := m.files[p]
	if !ok || !e.link {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return string(e.data), nil
}

// Lstat implements fs.ReadLinkFS.
func (m *memFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := m.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return m.info(p), nil
}

// memFile is an open file or directory of a memFS.
type memFile struct {
	info fs.FileInfo
	r    *strings.Reader // nil for a directory
	// entries are a directory's entries, off how many ReadDir returned.
	entries []fs.DirEntry
	off     int
}

// ReadDir implements fs.ReadDirFile.
func (f *memFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if f.r != nil {
		return nil, &fs.PathError{Op: "readdir", Path: f.info.Name(), Err: errors.New("not a directory")}
	}
	rest := f.entries[f.off:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	f.off += len(rest)
	return rest, nil
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(b []byte) (int, error) {
	if f.r == nil {
		return 0, &fs.PathError{Op: "read", Path: f.info.Name(), Err: errors.New("is a directory")}
	}
	return f.r.Read(b)
}

// memInfo is the fs.FileInfo of a memFS entry.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
