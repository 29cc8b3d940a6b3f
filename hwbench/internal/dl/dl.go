package dl

import (
	"errors"
	"strings"
)

// ErrLibraryNotFound is wrapped by the error Open returns when none of the
// sonames could be loaded.
var ErrLibraryNotFound = errors.New("not found")

// ErrSymbolNotFound is wrapped by the error Open returns when a library
// loaded but lacks a required symbol.
var ErrSymbolNotFound = errors.New("missing symbol")

// ErrUnsupported is wrapped by every error of a build without cgo or for a
// system other than Linux. It is errors.ErrUnsupported, so either sentinel
// matches.
var ErrUnsupported = errors.ErrUnsupported

// Sym names one function to resolve. Name is looked up first, then each of
// Alt in order (for functions renamed between library versions); the
// function is then known under Name. An Optional symbol that is missing is
// not an error; Library.Has reports it.
type Sym struct {
	Name     string
	Alt      []string
	Optional bool
}

// Syms builds required symbols from plain names.
func Syms(names ...string) []Sym {
	out := make([]Sym, len(names))
	for i, n := range names {
		out[i] = Sym{Name: n}
	}
	return out
}

// notFoundDetail condenses the loader's messages for a failed Open into one
// short clause: the soname prefix the loader repeats is removed and
// duplicates are dropped, so three "cannot open shared object file" errors
// read as one.
func notFoundDetail(sonames, msgs []string) string {
	var out []string
	seen := map[string]bool{}
	for i, m := range msgs {
		m = strings.TrimSpace(m)
		if i < len(sonames) {
			m = strings.TrimPrefix(m, sonames[i]+": ")
		}
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m)
	}
	return strings.Join(out, "; ")
}
