// Package cfake builds the stand-in C libraries the binding tests load: a
// testdata/*.c file compiled into a shared object with the system C
// compiler, and the globals in which such a library records the arguments
// it was called with. Tests only.
package cfake

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Build compiles testdata/src (relative to the test's package directory)
// into a shared library named soname in a temporary directory and returns
// its path. It skips the test when there is no C compiler ($CC, else cc)
// or the library does not build.
func Build(t testing.TB, src, soname string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s): %v", cc, err)
	}
	out := filepath.Join(t.TempDir(), soname)
	if msg, err := exec.Command(cc, "-shared", "-fPIC", "-o", out, filepath.Join("testdata", src)).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake library with %s: %v\n%s", cc, err, msg)
	}
	return out
}

// Addr returns the address of symbol name in the library at lib, failing
// the test when it cannot be resolved.
func Addr(t testing.TB, lib, name string) unsafe.Pointer {
	t.Helper()
	l, err := dl.Open([]string{lib}, []dl.Sym{{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return l.Addr(name)
}

// Var reads the global name of the library at lib (an argument it
// recorded) as a T.
func Var[T any](t testing.TB, lib, name string) T {
	t.Helper()
	return *(*T)(Addr(t, lib, name))
}
