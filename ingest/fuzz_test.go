package ingest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// Fuzz targets, one per parser and one for the detector, seeded from the
// corpus and the fixtures. Run one with, for example,
//
//	go test ./ingest -run '^$' -fuzz '^FuzzParseNCCLTests$' -fuzztime 20s
//
// Crashers found are kept as regression seeds under testdata/fuzz.

// seedChunk is the largest seed: big inputs make the fuzzer's
// minimisation slow, so larger files are added as chunks cut at line breaks
// (the start, which holds the headers, the middle and the end).
const seedChunk = 8 << 10

// seed adds the files matching the globs (relative to testdata) to f.
func seed(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(filepath.Join("testdata", g))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if len(b) <= seedChunk {
				f.Add(b)
				continue
			}
			for _, at := range []int{0, len(b)/2 - seedChunk/2, len(b) - seedChunk} {
				lo := at
				if i := bytes.IndexByte(b[lo:], '\n'); lo > 0 && i >= 0 {
					lo += i + 1
				}
				f.Add(b[lo:min(lo+seedChunk, len(b))])
			}
		}
	}
}

// checkResult holds every parser to the same contract: an error or an
// artifact, errors with the package prefix, and artifacts that findings
// and JSON can handle.
func checkResult(t *testing.T, a *Artifact, err error) {
	t.Helper()
	if err != nil {
		if a != nil {
			t.Fatalf("artifact and error: %v", err)
		}
		if !strings.HasPrefix(err.Error(), "calibrate: ") {
			t.Fatalf("error without prefix: %v", err)
		}
		return
	}
	if a == nil {
		t.Fatal("nil artifact without error")
	}
	addFindings(a)
	if _, err := json.Marshal(a); err != nil {
		t.Fatalf("artifact does not marshal: %v", err)
	}
	if a.Topo != nil {
		specMatrix(&a.Topo.Node)
		_, _ = a.Topo.NodeSpec("H100-SXM", "400G", model.NICIB)
	}
}

func FuzzParseNCCLTests(f *testing.F) {
	seed(f, "raw/nccltests_*", "nccltests_*.txt")
	f.Add([]byte("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n8 2 float sum -1 1 0 0 0 1 0 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseNCCLTests("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseNCCLLog(f *testing.F) {
	seed(f, "raw/nccldebug_*", "raw/nccltests_h100sxm_2x*", "nccltests_allgather_*")
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0(1)/GDRDMA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseNCCLLog("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseTopoMatrix(f *testing.F) {
	seed(f, "raw/topo_*")
	f.Add([]byte("\tGPU0\tGPU1\tmlx5_0\nGPU0\t X \tPXB\tPIX\nGPU1\tPXB\t X \tNODE\nmlx5_0\tPIX\tNODE\t X\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseTopoMatrix("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseTopoXML(f *testing.F) {
	seed(f, "*.xml", "azure/*.xml")
	f.Add([]byte(`<system><cpu numaid="0"><pci class="0x060400"><pci class="0x030200" busid="a"><gpu dev="0" sm="90"><nvlink target="a" count="2" tclass="0x030200"/></gpu></pci></pci></cpu></system>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseTopoXML("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseP2P(f *testing.F) {
	seed(f, "raw/p2pbw_*")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseP2P("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseNVBandwidth(f *testing.F) {
	seed(f, "raw/nvbandwidth_*", "nvbandwidth_*.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseNVBandwidth("fuzz", b)
		checkResult(t, a, err)
		a, err = parseNVBandwidthJSON("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParsePerftest(f *testing.F) {
	seed(f, "perftest_*")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parsePerftest("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseIBStat(f *testing.F) {
	seed(f, "raw/ibstat*", "ibstat_*")
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseIBStat("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParseJSON(f *testing.F) {
	seed(f, "*.json")
	f.Add([]byte(`[{"results":[{"size":"8","out_of_place":{"alg_bw":"1","bus_bw":1e308,"time":-1}}]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseNCCLTestsJSON("fuzz", b)
		checkResult(t, a, err)
	})
}

func FuzzParse(f *testing.F) {
	seed(f, "raw/*", "*.*")
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xfe, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Parse("fuzz", strings.NewReader(string(b)))
		checkResult(t, a, err)
		if err == nil && a.Kind == "" {
			t.Fatal("artifact without kind")
		}
	})
}
