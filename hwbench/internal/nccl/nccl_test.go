package nccl

import (
	"errors"
	"testing"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

func TestVersionString(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{22105, "2.21.5"}, // NCCL_VERSION(2,21,5) = 2*10000 + 21*100 + 5 (2.9 and later)
		{23007, "2.30.7"},
		{2804, "2.8.4"}, // before 2.9: 2*1000 + 8*100 + 4
		{0, ""},
	}
	for _, tc := range tests {
		if got := VersionString(tc.code); got != tc.want {
			t.Errorf("VersionString(%d) = %q, want %q", tc.code, got, tc.want)
		}
	}
}

func TestLoadOnThisMachine(t *testing.T) {
	l, err := Load()
	if err != nil {
		if !errors.Is(err, dl.ErrLibraryNotFound) && !errors.Is(err, dl.ErrUnsupported) {
			t.Fatalf("Load: %v (want ErrLibraryNotFound or ErrUnsupported when absent)", err)
		}
		t.Skipf("no NCCL: %v", err)
	}
	v, err := l.Version()
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if VersionString(v) == "" {
		t.Errorf("Version = %d, not a version code", v)
	}
}
