//go:build cgo && linux

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// hb_dlopen opens name and, on failure, copies dlerror() into err. Both run
// in one C call, so they share the OS thread dlerror's state lives on.
static void *hb_dlopen(const char *name, char *err, size_t n) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		strncpy(err, e ? e : "dlopen failed", n - 1);
		err[n - 1] = 0;
	}
	return h;
}

// hb_dlsym resolves name in h; on failure it copies dlerror() into err.
static void *hb_dlsym(void *h, const char *name, char *err, size_t n) {
	dlerror();
	void *p = dlsym(h, name);
	if (p == NULL) {
		const char *e = dlerror();
		strncpy(err, e ? e : "symbol is NULL", n - 1);
		err[n - 1] = 0;
	}
	return p;
}

static int hb_dlclose(void *h) { return dlclose(h); }

// hb_call_int_int calls a resolved int(int) function; tests use it to prove
// that a resolved address is callable.
static int hb_call_int_int(void *fn, int x) { return ((int (*)(int))fn)(x); }
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Library is a loaded shared library with its symbols resolved.
// Its methods are safe for concurrent use; it is immutable after Open.
type Library struct {
	h      unsafe.Pointer
	soname string
	syms   map[string]unsafe.Pointer
}

const errLen = 512

func dlerrorString(buf []C.char) string { return C.GoString(&buf[0]) }

// Open loads the first of sonames that the dynamic loader finds (a soname
// such as "libcudart.so.12" or a path) and resolves syms in it. If none
// loads, the error reads "<sonames>: not found (<loader message>)" and wraps
// ErrLibraryNotFound. If a required symbol is missing the library is closed
// and the error names every missing symbol and wraps ErrSymbolNotFound.
func Open(sonames []string, syms []Sym) (*Library, error) {
	if len(sonames) == 0 {
		return nil, fmt.Errorf("dl: no library name given")
	}
	buf := make([]C.char, errLen)
	var msgs []string
	for _, name := range sonames {
		cname := C.CString(name)
		h := C.hb_dlopen(cname, &buf[0], errLen)
		C.free(unsafe.Pointer(cname))
		if h == nil {
			msgs = append(msgs, dlerrorString(buf))
			continue
		}
		l := &Library{h: h, soname: name, syms: make(map[string]unsafe.Pointer, len(syms))}
		if err := l.resolve(syms, buf); err != nil {
			C.hb_dlclose(h)
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("%s: %w (%s)", strings.Join(sonames, ", "), ErrLibraryNotFound, notFoundDetail(sonames, msgs))
}

func (l *Library) resolve(syms []Sym, buf []C.char) error {
	var missing, detail []string
	for _, s := range syms {
		var p unsafe.Pointer
		var last string
		for _, n := range append([]string{s.Name}, s.Alt...) {
			cn := C.CString(n)
			p = C.hb_dlsym(l.h, cn, &buf[0], errLen)
			C.free(unsafe.Pointer(cn))
			if p != nil {
				break
			}
			last = dlerrorString(buf)
		}
		if p != nil {
			l.syms[s.Name] = p
			continue
		}
		if s.Optional {
			l.syms[s.Name] = nil
			continue
		}
		missing = append(missing, s.Name)
		detail = append(detail, last)
	}
	if len(missing) == 0 {
		return nil
	}
	noun := "symbol"
	if len(missing) > 1 {
		noun = "symbols"
	}
	return fmt.Errorf("%s: %w: %s %s (%s)", l.soname, ErrSymbolNotFound, noun, strings.Join(missing, ", "), detail[0])
}

// Soname returns the name the library was loaded under.
func (l *Library) Soname() string { return l.soname }

// Has reports whether symbol name was resolved.
func (l *Library) Has(name string) bool { return l.syms[name] != nil }

// Addr returns the address of symbol name, nil when it was optional and
// missing. Asking for a name that was not passed to Open panics: that is a
// bug in the binding, not something a user can cause.
func (l *Library) Addr(name string) unsafe.Pointer {
	p, ok := l.syms[name]
	if !ok {
		panic("dl: symbol " + name + " was not requested from " + l.soname)
	}
	return p
}

// Close unloads the library. Bindings normally keep GPU libraries loaded for
// the life of the process; Close exists for tests and short-lived probes.
func (l *Library) Close() error {
	if l == nil || l.h == nil {
		return nil
	}
	if C.hb_dlclose(l.h) != 0 {
		return fmt.Errorf("dl: dlclose %s failed", l.soname)
	}
	l.h = nil
	return nil
}

// Probe reports whether one of sonames can be loaded, without resolving
// anything; the library is closed again. The error is Open's.
func Probe(sonames []string) error {
	l, err := Open(sonames, nil)
	if err != nil {
		return err
	}
	return l.Close()
}

// callIntInt calls a resolved int(int) function (tests only).
func callIntInt(fn unsafe.Pointer, x int) int { return int(C.hb_call_int_int(fn, C.int(x))) }
