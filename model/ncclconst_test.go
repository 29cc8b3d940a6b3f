package model

import "testing"

// TestArchIndex: NCCL's tuning columns by SM version (tuning.cc): Turing
// uses Volta's, Ada Ampere's.
func TestArchIndex(t *testing.T) {
	for sm, want := range map[int]int{60: ArchVolta, 70: ArchVolta, 75: ArchVolta, 80: ArchAmpere, 86: ArchAmpere, 89: ArchAmpere, 90: ArchHopper, 100: ArchBlackwell, 120: ArchBlackwell} {
		if got := ArchIndex(sm); got != want {
			t.Errorf("ArchIndex(%d) = %d, want %d", sm, got, want)
		}
	}
}

// TestProtocolGeometry: the buffer geometry nccl-facts §4.1 gives: the
// Simple ring chunk is 2 MiB in 2 slices, LL carries half its line,
// LL128 120 of 128 bytes and 576 000 B per step.
func TestProtocolGeometry(t *testing.T) {
	if got := RingChunkSteps * StepPayloadSimple; got != 2<<20 {
		t.Errorf("Simple ring chunk %d B, want 2 MiB", got)
	}
	if RingChunkSteps/RingSliceSteps != 2 {
		t.Errorf("%d slices per Simple chunk, want 2", RingChunkSteps/RingSliceSteps)
	}
	if StepPayload(ProtoLL128) != 576000 || StepPayload(ProtoLL) != 32<<10 {
		t.Errorf("step payloads LL %g, LL128 %g", StepPayload(ProtoLL), StepPayload(ProtoLL128))
	}
	if ProtoPayload(ProtoLL) != 0.5 || ProtoPayload(ProtoLL128) != 120.0/128 || ProtoPayload(ProtoSimple) != 1 {
		t.Error("protocol payload fractions")
	}
}

// TestHWLatUsAt: the per-release hwLat rows as src/graph/tuning.cc has them
// at v2.7.8-1, v2.8.4-1, v2.12.7-1, v2.14.3-1, v2.18.3-1, v2.19.3-1 and
// v2.23.4-1; the newest release reads the current table.
func TestHWLatUsAt(t *testing.T) {
	for _, c := range []struct {
		minor int
		class LatClass
		algo  Algo
		proto Proto
		want  float64
	}{
		{7, LatNet, AlgoTree, ProtoSimple, 50},
		{8, LatNet, AlgoTree, ProtoSimple, 28},
		{18, LatNet, AlgoTree, ProtoSimple, 14},
		{18, LatPCI, AlgoTree, ProtoSimple, 6},
		{18, LatNVLink, AlgoTree, ProtoSimple, 4},
		{21, LatNet, AlgoTree, ProtoSimple, 28},
		{21, LatNVLink, AlgoTree, ProtoSimple, 28},
		{23, LatNet, AlgoTree, ProtoSimple, 14},
		{23, LatPCI, AlgoTree, ProtoSimple, 4},
		{11, LatNet, AlgoRing, ProtoSimple, 9.6},
		{12, LatNet, AlgoRing, ProtoSimple, 28},
		{14, LatNet, AlgoRing, ProtoSimple, 9.6},
		{19, LatNet, AlgoRing, ProtoSimple, 14},
		{9, LatNVLink, AlgoRing, ProtoLL, .47},
		{9, LatNVLink, AlgoTree, ProtoLL, .52},
		{7, LatNVLink, AlgoTree, ProtoLL128, 1.2},
		{9, LatNet, AlgoTree, ProtoLL, 5.0},
		{9, LatNet, AlgoRing, ProtoLL128, 4.0},
	} {
		if got := HWLatUsAt(Version{2, c.minor}, c.class, c.algo, c.proto); got != c.want {
			t.Errorf("2.%d class %d %s/%s: %g, tuning.cc has %g", c.minor, c.class, c.algo, c.proto, got, c.want)
		}
	}
	for cl := LatClass(0); cl < NumLatClasses; cl++ {
		for _, a := range []Algo{AlgoTree, AlgoRing, AlgoNVLS} {
			for p := Proto(0); p < NumProtos; p++ {
				if got, want := HWLatUsAt(Newest(), cl, a, p), HWLatUs(cl, a, p); got != want {
					t.Errorf("newest release, class %d %s/%s: %g, table %g", cl, a, p, got, want)
				}
			}
		}
	}
}

// TestNVLSTreeChunk: NCCL's NVLSTree chunk rule (enqueue.cc, 2.26.2 and
// 2.30) on 8x H100 nodes (16 channels, 8 heads): 128 KiB on 2 nodes down
// to 64 MiB, 64 KiB below it, 32 KiB below 8 MiB; 64 KiB on 4 nodes or
// more at every large size; NCCL_NVLS_CHUNKSIZE raises the start, the
// 256 KiB cut applies below 32 x 128 x 512 KiB = 2 GiB.
func TestNVLSTreeChunk(t *testing.T) {
	const K, M, G = 1 << 10, 1 << 20, 1 << 30
	for _, tc := range []struct {
		bytes    float64
		nodes    int
		maxChunk Bytes
		want     float64
	}{
		{8 * G, 2, 0, 128 * K}, {64 * M, 2, 0, 128 * K}, {64*M - 1, 2, 0, 64 * K}, {8 * M, 2, 0, 64 * K}, {8*M - 1, 2, 0, 32 * K},
		{8 * G, 4, 0, 64 * K}, {8 * G, 8, 0, 64 * K}, {8*M - 1, 8, 0, 32 * K},
		{8 * G, 2, 512 * K, 512 * K}, {2*G - 1, 2, 512 * K, 256 * K}, {8 * G, 8, 512 * K, 64 * K},
	} {
		if got := NVLSTreeChunk(tc.bytes, 16, 8, tc.nodes, tc.maxChunk); got != tc.want {
			t.Errorf("NVLSTreeChunk(%.0f, 16, 8, %d nodes, max %d) = %.0f, want %.0f", tc.bytes, tc.nodes, tc.maxChunk, got, tc.want)
		}
	}
}

// TestNVLSChunk: NCCL's NVLS chunk rule (enqueue.cc) on 8x H100 (16
// channels, 8 heads: 128 KiB from 1 GiB, 64 KiB from 64 MiB, 32 KiB from
// 8 MiB) and on a 72-GPU NVL72 rack (24 channels, 32 heads).
func TestNVLSChunk(t *testing.T) {
	const K, M, G = 1 << 10, 1 << 20, 1 << 30
	for _, tc := range []struct {
		bytes     float64
		nc, heads int
		want      float64
	}{
		{G, 16, 8, 128 * K}, {G - 1, 16, 8, 64 * K}, {64 * M, 16, 8, 64 * K}, {32 * M, 16, 8, 32 * K},
		{8 * M, 16, 8, 32 * K}, {8*M - 1, 16, 8, 16 * K}, {1 * K, 16, 8, 16 * K},
		{8 * G, 24, 32, 128 * K}, {4 * G, 24, 32, 64 * K}, {384 * M, 24, 32, 64 * K}, {256 * M, 24, 32, 32 * K}, {32 * M, 24, 32, 16 * K},
	} {
		if got := NVLSChunk(tc.bytes, tc.nc, tc.heads, 0); got != tc.want {
			t.Errorf("NVLSChunk(%.0f, %d, %d) = %.0f, want %.0f", tc.bytes, tc.nc, tc.heads, got, tc.want)
		}
	}
	// NCCL_NVLS_CHUNKSIZE: a larger chunk on large calls, a smaller one
	// is never grown.
	if got := NVLSChunk(16*G, 16, 8, 512*K); got != 512*K {
		t.Errorf("NCCL_NVLS_CHUNKSIZE=512K at 16 GiB: chunk %.0f, want 512K", got)
	}
	if got := NVLSChunk(16*G, 16, 8, 32*K); got != 32*K {
		t.Errorf("NCCL_NVLS_CHUNKSIZE=32K at 16 GiB: chunk %.0f, want 32K", got)
	}
	if NVLSHeads(8) != 8 || NVLSHeads(72) != 32 {
		t.Errorf("heads: 8 GPUs %d, 72 GPUs %d; want 8, 32", NVLSHeads(8), NVLSHeads(72))
	}
}

// TestNVLSWarps: the role split of device/all_reduce.h (v2.19.3-1 ..
// v2.30.7-1) without registered buffers: a rank with a tree parent keeps
// 6 scatter, 5 gather, 5 reduce and 4 network-receive warps; the root and
// one-node NVLS 8, 7 and 5, or 7, 6 and 7 on at most 6 ranks; all 20.
func TestNVLSWarps(t *testing.T) {
	for _, c := range []struct {
		hasUp                          bool
		nRanks                         int
		scatter, gather, reduce, bcast int
	}{
		{true, 16, 6, 5, 5, 4},
		{true, 4, 6, 5, 5, 4},
		{false, 16, 8, 7, 5, 0},
		{false, 8, 8, 7, 5, 0},
		{false, 6, 7, 6, 7, 0},
	} {
		s, g, r, b := NVLSWarps(c.hasUp, c.nRanks)
		if s != c.scatter || g != c.gather || r != c.reduce || b != c.bcast {
			t.Errorf("NVLSWarps(%v, %d) = %d/%d/%d/%d, want %d/%d/%d/%d", c.hasUp, c.nRanks, s, g, r, b, c.scatter, c.gather, c.reduce, c.bcast)
		}
		if s+g+r+b != NVLSCTAWarps || NVLSCTAWarps != 20 {
			t.Errorf("NVLSWarps(%v, %d): %d warps of %d", c.hasUp, c.nRanks, s+g+r+b, NVLSCTAWarps)
		}
	}
}
