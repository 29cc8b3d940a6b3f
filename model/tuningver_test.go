package model

import "testing"

// TestTunerGen: per-release constants as src/graph/tuning.cc has them at
// the tags named in tuningver.go.
func TestTunerGen(t *testing.T) {
	g := func(minor, sm int) tunerGen { return tunerGen{Version{2, minor}, sm} }
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"2.8 interSteps AllReduce 4 nodes", g(8, 80).interSteps(AllReduce, 4), 6},
		{"2.12 interSteps AllReduce 4 nodes", g(12, 80).interSteps(AllReduce, 4), 8},
		{"2.22 interSteps AllReduce 4 nodes", g(22, 90).interSteps(AllReduce, 4), 8},
		{"2.23 interSteps AllReduce 4 nodes", g(23, 90).interSteps(AllReduce, 4), 6},
		{"2.22 interSteps AllGather 4 nodes", g(22, 90).interSteps(AllGather, 4), 3},
		{"2.17 base ring LL", g(17, 80).baseLat(AlgoRing, ProtoLL), 3.6},
		{"2.22 base tree Simple", g(22, 90).baseLat(AlgoTree, ProtoSimple), 0},
		{"2.23 base tree Simple", g(23, 90).baseLat(AlgoTree, ProtoSimple), 8.4},
		{"2.8 perChMaxTreeBw Ampere 3+ nodes", g(8, 80).treePerCh(ArchAmpere, 2), 16.0},
		{"2.10 perChMaxTreeBw Ampere 3+ nodes", g(10, 80).treePerCh(ArchAmpere, 2), 17.8},
		{"2.17 perChMaxTreeBw Hopper 3+ nodes", g(17, 90).treePerCh(ArchHopper, 2), 33.0},
		{"2.22 perChMaxTreeBw Hopper 3+ nodes", g(22, 90).treePerCh(ArchHopper, 2), 36.0},
		{"2.8 ll128MaxBwPerCh AllReduce", g(8, 80).ringLL128PerCh(AllReduce, ArchAmpere), 16.9},
		{"2.12 ll128MaxBwPerCh", g(12, 80).ringLL128PerCh(AllReduce, ArchAmpere), 20},
		{"2.8 tree LL128 factor", g(8, 80).treeLL128Factor(2), 0.915},
		{"2.20 ring LL factor", g(20, 90).ringLLFactor(AllReduce, 2), 0.25},
		{"2.21 ring LL factor", g(21, 90).ringLLFactor(AllReduce, 2), 0.5},
		{"2.22 ring LL128 factor, 1 GPU per node", g(22, 90).ringLL128Factor(1), 0.7},
		{"2.23 ring LL128 factor, 1 GPU per node", g(23, 90).ringLL128Factor(1), 0.92},
		{"2.17 Ampere bus cap", g(17, 80).busCap(ArchAmpere), 235},
		{"2.18 Ampere bus cap", g(18, 80).busCap(ArchAmpere), 0},
		{"2.20 Hopper llMaxBw 1 node", g(20, 90).llMaxBW1Node(ArchHopper), 87.7},
		{"2.21 Hopper llMaxBw 1 node", g(21, 90).llMaxBW1Node(ArchHopper), 141},
		{"2.17 ring plateau SM90", g(17, 90).ringPlateau(1<<30, 16, 8), 1.5},
		{"2.9 ring plateau below nRanks/16 x 64K", g(9, 80).ringPlateau(32<<10, 16, 8), 1},
		{"2.30 ring plateau SM80", g(30, 80).ringPlateau(1<<30, 16, 8), 1.4},
		{"2.30 ring plateau SM70", g(30, 70).ringPlateau(1<<30, 16, 8), 1.9},
		{"2.30 tree correction Simple 256 MiB", g(30, 90).treeCorrectionAt(ProtoSimple, 256<<20), .9},
		{"2.30 tree correction Simple 512 MiB (past the table)", g(30, 90).treeCorrectionAt(ProtoSimple, 512<<20), 1},
		{"2.8 tree correction LL128 512 KiB", g(8, 80).treeCorrectionAt(ProtoLL128, 512<<10), .5},
		{"2.10 tree correction LL128 512 KiB", g(10, 80).treeCorrectionAt(ProtoLL128, 512<<10), .6},
		{"2.22 tree correction below 64 B", g(22, 90).treeCorrectionAt(ProtoSimple, 32), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %g, tuning.cc has %g", c.what, c.got, c.want)
		}
	}
	if a := g(14, 90).archIndex(); a != ArchVolta {
		t.Errorf("2.14 on SM90: column %d, want Volta's (only SM80 took Ampere's)", a)
	}
	if a := g(24, 100).archIndex(); a != ArchHopper {
		t.Errorf("2.24 on SM100: column %d, want Hopper's", a)
	}
	if log2i(1) != 0 || log2i(3) != 1 || log2i(4) != 2 || log2i(7) != 2 {
		t.Error("log2i is not floor(log2)")
	}
}
