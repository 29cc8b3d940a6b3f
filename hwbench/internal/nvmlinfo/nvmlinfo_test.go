package nvmlinfo

import (
	"errors"
	"testing"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

func TestNormalizeBusID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"00000000:18:00.0", "0000:18:00.0"}, // NVML prints an 8-digit domain
		{"00000009:01:00.0\x00\x00", "0009:01:00.0"},
		{"0000:1B:00.0", "0000:1b:00.0"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := NormalizeBusID(tc.in); got != tc.want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	if AncestorName(10) != "single" || AncestorName(50) != "system" {
		t.Error("AncestorName")
	}
	if P2PStatusName(0) != "ok" || P2PStatusName(4) != "disabled-by-regkey" || P2PStatusName(99) != "unknown" {
		t.Error("P2PStatusName")
	}
	if RemoteTypeName(2) != "switch" || RemoteTypeName(0) != "gpu" {
		t.Error("RemoteTypeName")
	}
}

func TestQueryOnThisMachine(t *testing.T) {
	info, err := Query()
	if err != nil {
		if errors.Is(err, dl.ErrLibraryNotFound) || errors.Is(err, dl.ErrUnsupported) {
			t.Skipf("no NVML: %v", err)
		}
		t.Skipf("NVML present but unusable (no GPU or driver?): %v", err)
	}
	for _, g := range info.GPUs {
		if g.Name == "" || g.BusID == "" {
			t.Errorf("GPU %d lacks name or bus id: %+v", g.Index, g)
		}
	}
}
