package ingest

import (
	"strings"
	"testing"
)

// gdrLog is an NCCL_DEBUG=INFO log of 2 nodes x 2 PCIe GPUs in NCCL's line
// format (2.21): the ring's receives come in by GPUDirect RDMA; its sends
// are given by the two lines send (varied by the test).
func gdrLog(send string) string {
	return `NCCL version 2.21.5+cuda12.4
nodeA:1001:1015 [0] NCCL INFO Using network IB
nodeA:1001:1015 [0] NCCL INFO comm 0x55a1 rank 0 nRanks 4 nNodes 2 localRanks 2 localRank 0 MNNVL 0
nodeA:1001:1015 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
nodeA:1001:1015 [0] NCCL INFO Channel 01/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
nodeA:1001:1015 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
nodeA:1002:1016 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0` + send + `
nodeA:1002:1016 [1] NCCL INFO Channel 01/0 : 1[1] -> 2[0] [send] via NET/IB/0` + send + `
nodeA:1001:1015 [0] NCCL INFO Connected all rings
`
}

// TestGDRReadPolicyIsNotMissingGDR: receives by GPUDirect RDMA with sends
// staged is NCCL's GDR read policy (NCCL_NET_GDR_READ, off by default on
// GPUs before Ampere without an NVLink peer; ncclTopoCheckGdr), an info,
// not the net-without-gdr warning whose causes (no nvidia-peermem, GDR
// level) the receives disprove. Sends and receives both staged stay the
// warning; both by GDRDMA give neither.
func TestGDRReadPolicyIsNotMissingGDR(t *testing.T) {
	has := func(fs []Finding, code string) bool {
		for _, f := range fs {
			if f.Code == code {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name                     string
		text                     string
		readOff, noGDR, recvOnly bool
	}{
		{"sends staged", gdrLog(""), true, false, true},
		{"all staged", strings.ReplaceAll(gdrLog(""), "/GDRDMA", ""), false, true, false},
		{"all GDRDMA", gdrLog("/GDRDMA"), false, false, false},
	} {
		a, err := Parse("log.txt", strings.NewReader(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		if a.Log == nil {
			t.Fatalf("%s: not read as a log", tc.name)
		}
		if has(a.Findings, FindGDRReadOff) != tc.readOff || has(a.Findings, FindNoGDR) != tc.noGDR || a.Log.GDRReceivesOnly() != tc.recvOnly {
			t.Errorf("%s: findings %v, receives only %v; want %s %v, %s %v, receives only %v", tc.name, a.Findings, a.Log.GDRReceivesOnly(),
				FindGDRReadOff, tc.readOff, FindNoGDR, tc.noGDR, tc.recvOnly)
		}
	}
}
