package model

import (
	"strings"
	"testing"
)

func TestStacks(t *testing.T) {
	for k, want := range map[NICKind]NetStack{NICIB: StackIBVerbs, NICRoCE: StackRoCE, NICEFA: StackEFAOFI, NICTCP: StackSocket} {
		if got := DefaultStack(k); got != want || !got.Native() || got.Kind() != k {
			t.Errorf("DefaultStack(%s) = %s (native %v, kind %s), want %s", k, got, got.Native(), got.Kind(), want)
		}
	}
	for _, s := range NetStacks() {
		if p, err := ParseNetStack(strings.ToUpper(string(s))); err != nil || p != s {
			t.Errorf("ParseNetStack(%q) = %q, %v", s, p, err)
		}
		if s.NCCLNet() == "" || StackIndex(s) < 0 {
			t.Errorf("%s: no NCCL net name or index", s)
		}
	}
	if _, err := ParseNetStack("nvshmem"); err == nil || !strings.Contains(err.Error(), "ib-verbs, roce, efa-ofi, gib, tcpx, tcpxo, socket") {
		t.Errorf("unknown stack: %v, want the known names listed", err)
	}
	if _, err := ResolveStack("tcpxo", NICIB); err == nil {
		t.Error("tcpxo on InfiniBand NICs resolved")
	}
	if s, err := ResolveStack("gib", NICRoCE); err != nil || s.Native() {
		t.Errorf("gib on RoCE: %s, %v (want a non-default stack)", s, err)
	}
	if StackSocket.GPUDirect() || !StackTCPXO.GPUDirect() {
		t.Error("NET/Socket stages through host memory; TCPXO moves device memory")
	}
}

// TestEFAPlatformLatency: aws-ofi-nccl src/platform-aws.cpp reports 75 us
// on p4d and p5, 35 us on p5en and p6 (v1.16.0), 150 us on p3dn.
func TestEFAPlatformLatency(t *testing.T) {
	for p, want := range map[string]float64{"p4d.24xlarge": 75, "p5.48xlarge": 75, "p5e.48xlarge": 75, "p5en.48xlarge": 35, "p6-b200.48xlarge": 35, "p3dn.24xlarge": 150} {
		if got, ok := EFAPlatformLatencyUs(p); !ok || got != want {
			t.Errorf("%s: %g (%v), want %g", p, got, ok, want)
		}
	}
	if _, ok := EFAPlatformLatencyUs("g5.48xlarge"); ok {
		t.Error("a platform the table lacks has a latency")
	}
}
