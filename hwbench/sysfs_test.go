package hwbench

import (
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
)

func dev(addr string, numa int, chain ...string) *pciDev {
	return &pciDev{Addr: addr, NUMA: numa, Chain: append(chain, addr)}
}

func TestPathType(t *testing.T) {
	// A DGX A100-like socket: host bridge pci0000:00, root port, top switch
	// (up 01:00.0, downs 02:0x.0), second-level switches below it.
	gpuA := dev("0000:07:00.0", 0, "pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0")
	gpuB := dev("0000:08:00.0", 0, "pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:01.0")
	nic := dev("0000:0c:00.0", 0, "pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:04.0", "0000:0a:00.0", "0000:0b:00.0")
	nic2 := dev("0000:0c:00.1", 0, "pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:04.0", "0000:0a:00.0", "0000:0b:00.0")
	direct := dev("0000:21:00.0", 0, "pci0000:00", "0000:00:03.0")
	otherHB := dev("0000:41:00.0", 0, "pci0000:40", "0000:40:01.0")
	otherSocket := dev("0000:c1:00.0", 1, "pci0000:c0", "0000:c0:01.0")
	vm := dev("0000:00:05.0", -1, "pci0000:00")
	tests := []struct {
		name string
		a, b *pciDev
		want string
	}{
		{"self", gpuA, gpuA, "X"},
		{"same second-level switch", gpuA, gpuB, "PIX"},
		{"across the top switch", gpuA, nic, "PXB"},
		{"two functions of one NIC", nic, nic2, "PIX"},
		{"root port vs switch", direct, gpuA, "PHB"},
		{"another host bridge", gpuA, otherHB, "NODE"},
		{"another socket", gpuA, otherSocket, "SYS"},
		{"VM root bus, no NUMA", vm, direct, "PHB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pathType(tc.a, tc.b); got != tc.want {
				t.Errorf("pathType = %s, want %s (switches %v / %v)", got, tc.want, tc.a.switches(), tc.b.switches())
			}
			if got := pathType(tc.b, tc.a); got != tc.want {
				t.Errorf("pathType reversed = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSysfsHelpers(t *testing.T) {
	gids := []struct{ in, want string }{
		{"fe80:0000:0000:0000:b859:9f03:00d4:1234", "fe80::b859:9f03:d4:1234"},
		{"0000:0000:0000:0000:0000:ffff:0a00:0101", "::ffff:10.0.1.1"},
		{"2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"},
		{"fe80:0000:0000:0000:0000:0000:0000:0000", "fe80::"},
		{"not a gid", "not a gid"},
	}
	for _, g := range gids {
		if got := formatGID(g.in); got != g.want {
			t.Errorf("formatGID(%q) = %q, want %q", g.in, got, g.want)
		}
	}
	for in, want := range map[string]string{"4: ACTIVE": "Active", "1: DOWN": "Down", "5: LinkUp": "LinkUp", "3: Disabled": "Disabled"} {
		if got := stateWord(in); got != want {
			t.Errorf("stateWord(%q) = %q, want %q", in, got, want)
		}
	}
	if !naturalLess("mlx5_2", "mlx5_10") || naturalLess("mlx5_10", "mlx5_2") || !naturalLess("a", "b") {
		t.Error("naturalLess")
	}
	cpu := fstest.MapFS{"proc/cpuinfo": {Data: []byte("processor\t: 0\nvendor_id\t: AuthenticAMD\n")}}
	if got := cpuVendor(cpu); got != "amd" {
		t.Errorf("cpuVendor = %q, want amd", got)
	}
	drv := fstest.MapFS{"proc/driver/nvidia/version": {Data: []byte("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\nGCC version: gcc 12\n")}}
	if got := driverFromProc(drv); got != "570.86.15" {
		t.Errorf("driverFromProc = %q", got)
	}
}

// TestReadPCIOnThisMachine reads this machine's real sysfs, whatever is in
// it, to check the reader copes with a real tree (no GPU needed).
func TestReadPCIOnThisMachine(t *testing.T) {
	root := os.DirFS("/")
	ents, err := fs.ReadDir(root, "sys/bus/pci/devices")
	if err != nil || len(ents) == 0 {
		t.Skip("no PCI devices in sysfs")
	}
	for _, e := range ents {
		d, err := readPCI(root, e.Name())
		if err != nil {
			t.Errorf("readPCI(%s): %v", e.Name(), err)
			continue
		}
		if d.Chain[len(d.Chain)-1] != e.Name() || d.hostBridge() == "" {
			t.Errorf("readPCI(%s): chain %v", e.Name(), d.Chain)
		}
	}
	if _, err := readHCAs(root); err != nil {
		t.Errorf("readHCAs: %v", err)
	}
}

func TestChooseRoute(t *testing.T) {
	tests := []struct {
		name    string
		port    HCAPort
		wantGID int
		wantLID int
		wantMTU int
		wantErr bool
	}{
		{"infiniband uses the LID", HCAPort{Port: 1, LinkLayer: "InfiniBand", LID: 7, ActiveMTU: 4096}, -1, 7, 4096, false},
		{"infiniband without SM", HCAPort{Port: 1, LinkLayer: "InfiniBand"}, -1, 0, 0, true},
		{"roce prefers v2 IPv4", HCAPort{Port: 1, LinkLayer: "Ethernet", GIDs: []GID{
			{0, "fe80::1", "IB/RoCE v1"}, {1, "fe80::1", "RoCE v2"}, {2, "::ffff:10.0.0.1", "IB/RoCE v1"}, {3, "::ffff:10.0.0.1", "RoCE v2"}}}, 3, 0, 1024, false},
		{"roce without types", HCAPort{Port: 2, LinkLayer: "Ethernet", GIDs: []GID{{0, "fe80::1", ""}, {5, "::ffff:10.0.0.9", ""}}}, 5, 0, 1024, false},
		{"roce without GIDs", HCAPort{Port: 1, LinkLayer: "Ethernet"}, -1, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := chooseRoute(tc.port)
			if (err != nil) != tc.wantErr {
				t.Fatalf("chooseRoute error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if r.GIDIndex != tc.wantGID || r.LID != tc.wantLID || r.MTU != tc.wantMTU || r.Port != tc.port.Port {
				t.Errorf("chooseRoute = %+v, want GID %d LID %d MTU %d", r, tc.wantGID, tc.wantLID, tc.wantMTU)
			}
		})
	}
}
