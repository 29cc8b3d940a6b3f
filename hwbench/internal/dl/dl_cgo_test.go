//go:build cgo && linux

package dl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/collsim/collsim/hwbench/internal/cfake"
	"github.com/collsim/collsim/hwbench/internal/dl"
)

// buildFakeLib compiles testdata/fakelib.c into a shared library, skipping
// the test when there is no C compiler.
func buildFakeLib(t *testing.T) string {
	t.Helper()
	return cfake.Build(t, "fakelib.c", "libhwbenchfake.so.1")
}

func TestOpenResolvesSymbols(t *testing.T) {
	lib := buildFakeLib(t)
	l, err := dl.Open([]string{"/nonexistent/libnope.so.9", lib}, []dl.Sym{
		{Name: "fake_add_one"},
		{Name: "fake_double"},
		{Name: "fake_version", Alt: []string{"fake_version_v2"}},
		{Name: "fake_optional", Optional: true},
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	if l.Soname() != lib {
		t.Errorf("Soname = %q, want %q (the first name that loads)", l.Soname(), lib)
	}
	tests := []struct {
		sym  string
		in   int
		want int
	}{
		{"fake_add_one", 41, 42}, // x+1
		{"fake_double", 21, 42},  // 2x
		{"fake_version", 7, 207}, // resolved through its Alt name: 200+x
	}
	for _, tc := range tests {
		t.Run(tc.sym, func(t *testing.T) {
			if !l.Has(tc.sym) {
				t.Fatalf("Has(%q) = false", tc.sym)
			}
			if got := dl.CallIntInt(l.Addr(tc.sym), tc.in); got != tc.want {
				t.Errorf("%s(%d) = %d, want %d", tc.sym, tc.in, got, tc.want)
			}
		})
	}
	if l.Has("fake_optional") || l.Addr("fake_optional") != nil {
		t.Errorf("optional missing symbol reported as present")
	}
}

func TestOpenErrors(t *testing.T) {
	lib := buildFakeLib(t)
	tests := []struct {
		name     string
		sonames  []string
		syms     []dl.Sym
		is       error
		contains []string
	}{
		{
			name:     "missing symbol is named",
			sonames:  []string{lib},
			syms:     dl.Syms("fake_add_one", "fake_no_such_function"),
			is:       dl.ErrSymbolNotFound,
			contains: []string{"fake_no_such_function", "missing symbol"},
		},
		{
			name:     "all missing symbols are named",
			sonames:  []string{lib},
			syms:     dl.Syms("fake_gone_a", "fake_double", "fake_gone_b"),
			is:       dl.ErrSymbolNotFound,
			contains: []string{"symbols fake_gone_a, fake_gone_b"},
		},
		{
			name:     "missing library wraps ErrLibraryNotFound",
			sonames:  []string{"libhwbench_does_not_exist.so.13", "libhwbench_does_not_exist.so.12"},
			syms:     dl.Syms("x"),
			is:       dl.ErrLibraryNotFound,
			contains: []string{"libhwbench_does_not_exist.so.13, libhwbench_does_not_exist.so.12: not found (", "cannot open shared object file"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := dl.Open(tc.sonames, tc.syms)
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			for _, c := range tc.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	lib := buildFakeLib(t)
	if err := dl.Probe([]string{lib}); err != nil {
		t.Errorf("Probe(%s): %v", lib, err)
	}
	if err := dl.Probe([]string{"libhwbench_does_not_exist.so.1"}); !errors.Is(err, dl.ErrLibraryNotFound) {
		t.Errorf("Probe(missing) = %v, want ErrLibraryNotFound", err)
	}
}
