package verbs

import (
	"errors"
	"testing"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

func TestDecoders(t *testing.T) {
	tests := []struct {
		name  string
		width int
		speed int
		want  float64
	}{
		{"NDR 4X", 2, 128, 400}, // 4 lanes x 100 Gb/s
		{"HDR 4X", 2, 64, 200},
		{"NDR200 2X", 16, 128, 200},
		{"EDR 4X", 2, 32, 100},
		{"FDR 4X", 2, 16, 56}, // ibstat prints 56
		{"unknown", 3, 128, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Port{Width: tc.width, Speed: tc.speed}).RateGbps(); got != tc.want {
				t.Errorf("RateGbps = %g, want %g", got, tc.want)
			}
		})
	}
	for m, b := range map[int]int{1: 256, 3: 1024, 5: 4096, 0: 0, 6: 0} {
		if got := MTUBytes(m); got != b {
			t.Errorf("MTUBytes(%d) = %d, want %d", m, got, b)
		}
		if b != 0 && MTUEnum(b) != m {
			t.Errorf("MTUEnum(%d) = %d, want %d", b, MTUEnum(b), m)
		}
	}
	if StateName(PortActive) != "Active" || PhysStateName(5) != "LinkUp" || LinkLayerName(LinkLayerEthernet) != "Ethernet" {
		t.Error("state names differ from ibstat's")
	}
}

func TestGIDString(t *testing.T) {
	v4 := GID{10: 0xff, 11: 0xff, 12: 10, 13: 0, 14: 0, 15: 1}
	if got := v4.String(); got != "::ffff:10.0.0.1" {
		t.Errorf("IPv4-mapped GID = %q", got)
	}
	ib := GID{0: 0xfe, 1: 0x80, 15: 0x34}
	if got := ib.String(); got != "fe80::34" {
		t.Errorf("link-local GID = %q", got)
	}
	if !(GID{}).IsZero() || ib.IsZero() {
		t.Error("IsZero wrong")
	}
}

func TestLoadOnThisMachine(t *testing.T) {
	l, err := Load()
	if err != nil {
		if !errors.Is(err, dl.ErrLibraryNotFound) && !errors.Is(err, dl.ErrUnsupported) {
			t.Fatalf("Load: %v (want ErrLibraryNotFound or ErrUnsupported when absent)", err)
		}
		t.Skipf("no libibverbs: %v", err)
	}
	devs, err := l.Devices()
	if err != nil {
		t.Skipf("libibverbs without usable devices: %v", err)
	}
	for _, d := range devs {
		if d.Name == "" || len(d.Ports) == 0 {
			t.Errorf("device %+v has no name or ports", d)
		}
	}
}
