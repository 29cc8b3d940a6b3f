package ingest

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// The files under testdata/azure are Azure's NCCL topology and graph files
// for its ND/NC-series VMs (see testdata/README.md for their origin). The
// expected layouts below are read off the files themselves.

func TestAzureTopologies(t *testing.T) {
	tests := []struct {
		file, gpu  string
		gpus, nics int
		sockets    int
		nicGen     int
		// what NodeSpecAssuming should build
		nvlink, speed string
		notes         []string
		numa0         []int // GPUs under socket 0, in the renumbered (PCI bus ID) order
	}{
		// ND A100 v4: 4 NUMA nodes, each a switch with 2 GPUs + 2 HDR NICs, Gen4 links.
		{"ndv4-topo.xml", "A100-SXM4", 8, 8, 4, 4, "nvswitch", "HDR",
			[]string{"assumed NVSwitch", "assumed NIC speed HDR", "bare <pci>"}, []int{2, 3}},
		// ND H100 v5: 2 sockets x 4 switches of 1 GPU + 1 NIC, Gen5 links.
		{"ndv5-topo.xml", "H100-SXM", 8, 8, 2, 5, "nvswitch", "NDR",
			[]string{"assumed NVSwitch", "assumed NIC speed NDR"}, []int{0, 1, 2, 3}},
		// ND v2: 8 V100 directly under two CPUs, one NIC on socket 0 (the file says 16 GT/s).
		{"ndv2-topo.xml", "V100-SXM2", 8, 1, 2, 4, "pairs", "HDR",
			[]string{"hybrid cube-mesh", "assumed NIC speed HDR"}, []int{0, 1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			a := mustParse(t, "testdata/azure/"+tc.file)
			if a.Kind != KindTopoXML || a.Topo == nil {
				t.Fatalf("kind %s", a.Kind)
			}
			ti := a.Topo
			n := ti.Node
			if n.GPUs != tc.gpus || n.NICs.Count != tc.nics || len(n.Sockets) != tc.sockets {
				t.Fatalf("gpus %d nics %d sockets %d", n.GPUs, n.NICs.Count, len(n.Sockets))
			}
			if ti.NICKind != model.NICIB || ti.NICPCIeGen != tc.nicGen || ti.NICSpeed != "" || n.GPU != "" || n.NVLink.Kind != "" {
				t.Fatalf("kind %q gen %d speed %q gpu %q nvlink %q", ti.NICKind, ti.NICPCIeGen, ti.NICSpeed, n.GPU, n.NVLink.Kind)
			}
			var under0 []int
			var walk func(b model.BridgeSpec)
			walk = func(b model.BridgeSpec) {
				under0 = append(under0, b.GPUs...)
				for _, s := range b.Switches {
					walk(s)
				}
			}
			for _, hb := range n.Sockets[0].HostBridges {
				walk(hb)
			}
			if sprint(under0) != sprint(tc.numa0) {
				t.Errorf("GPUs under socket 0 = %v, want %v", under0, tc.numa0)
			}
			if _, err := ti.NodeSpec("", "", ""); err == nil || !strings.Contains(err.Error(), "does not name the GPU model") {
				t.Fatalf("no GPU: err = %v", err)
			}
			spec, notes, err := ti.NodeSpecAssuming(tc.gpu, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if spec.NVLink.Kind != tc.nvlink || spec.NICs.Speed != tc.speed || spec.NICs.Kind != "ib" {
				t.Fatalf("nvlink %q nics %+v", spec.NVLink.Kind, spec.NICs)
			}
			all := strings.Join(append(append([]string(nil), ti.Notes...), notes...), "\n")
			for _, w := range tc.notes {
				if !strings.Contains(all, w) {
					t.Errorf("notes lack %q:\n%s", w, all)
				}
			}
			// Given speed and kind, nothing about NICs is assumed.
			_, notes, err = ti.NodeSpecAssuming(tc.gpu, "400G", model.NICRoCE)
			if err != nil {
				t.Fatal(err)
			}
			for _, nt := range notes {
				if strings.Contains(nt, "NIC") {
					t.Errorf("NIC assumed although given: %s", nt)
				}
			}
		})
	}
}

func sprint(v []int) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteString(itoa(x))
		b.WriteByte(' ')
	}
	return b.String()
}

func TestAzureNCv4(t *testing.T) {
	// NC A100 v4: 4 A100 PCIe (sm 80, <gpu> elements), one eth0 net of 100000 Mb/s.
	a := mustParse(t, "testdata/azure/ncv4-topo.xml")
	ti := a.Topo
	if ti.Node.GPU != "A100-PCIE" || ti.NICSpeed != "100G" || ti.NICKind != model.NICTCP {
		t.Fatalf("gpu %q speed %q kind %q", ti.Node.GPU, ti.NICSpeed, ti.NICKind)
	}
	spec, notes, err := ti.NodeSpecAssuming("", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if spec.NICs.Kind != "tcp" || spec.NICs.Speed != "100G" || len(notes) != 0 {
		t.Fatalf("nics %+v notes %v", spec.NICs, notes)
	}
}

func TestNICAssumptionNotes(t *testing.T) {
	// A dump with mlx5 nets and no speed: kind and speed are both assumed, and said.
	doc := `<system version="1"><cpu numaid="0" vendor="GenuineIntel">
<pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="90"/></pci>
<pci busid="0000:02:00.0" class="0x020700"><nic><net name="mlx5_0" dev="0"/></nic></pci>
</cpu></system>`
	a, err := Parse("x.xml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, notes, err := a.Topo.NodeSpecAssuming("H100-PCIE", "", "")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "assumed NIC kind ib") || !strings.Contains(all, "assumed NIC speed 200G") {
		t.Fatalf("notes = %v", notes)
	}
}

func TestGraphFile(t *testing.T) {
	a := mustParse(t, "testdata/azure/ncv4-graph.xml")
	if a.Kind != KindGraphXML || a.Graph == nil || a.Topo != nil {
		t.Fatalf("kind %s", a.Kind)
	}
	g := a.Graph
	// The file: graph 0 ring (pattern 4) with 2 channels, graph 1 balanced
	// tree (pattern 1) and graph 2 tree (pattern 3) with 4 each, all at 12 GB/s, SYS/PIX.
	if len(g.Graphs) != 3 {
		t.Fatalf("%d graphs", len(g.Graphs))
	}
	wantPat := []int{4, 1, 3}
	wantCh := []int{2, 4, 4}
	for i, gr := range g.Graphs {
		if gr.ID != i || gr.Pattern != wantPat[i] || len(gr.Channels) != wantCh[i] || gr.NChannels != wantCh[i] ||
			gr.SpeedIntra != 12 || gr.SpeedInter != 12 || gr.TypeIntra != "SYS" || gr.TypeInter != "PIX" {
			t.Errorf("graph %d = %+v", i, gr)
		}
	}
	ring := g.Ring()
	if ring == nil || sprint(ring.Channels[1].GPUs) != "0 3 2 1 " || ring.Channels[1].NetIn != -1 {
		t.Fatalf("ring = %+v", ring)
	}
	mg, err := ring.Graph()
	if err != nil || mg.Pattern != model.PatternRing || mg.TypeIntra != model.PathSYS || mg.NChannels != 2 || mg.BWIntra != 12 {
		t.Fatalf("model graph %+v, %v", mg, err)
	}
	if _, err := LoadTopology("testdata/azure/ncv4-graph.xml"); err == nil || !strings.Contains(err.Error(), "not a topology") {
		t.Fatalf("LoadTopology on a graph: %v", err)
	}
	if _, err := LoadGraph("testdata/azure/ndv5-topo.xml"); err == nil || !strings.Contains(err.Error(), "not an NCCL graph file") {
		t.Fatalf("LoadGraph on a topology: %v", err)
	}
}

func TestGraphFileNets(t *testing.T) {
	// The layout NCCL_GRAPH_DUMP_FILE writes for a multi-node ring: net in, GPUs, net out.
	doc := `<graphs version="1">
<graph id="0" pattern="4" crossnic="0" nchannels="2" bwintra="40" bwinter="24" latencyinter="0" typeintra="NVL" typeinter="PXB" samechannels="1">
<channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="1"/></channel>
<channel><net dev="1"/><gpu dev="1"/><gpu dev="1"/><net dev="0"/></channel>
</graph></graphs>`
	a, err := Parse("g.xml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	gr := a.Graph.Graphs[0]
	if gr.SpeedIntra != 40 || gr.SpeedInter != 24 || !gr.SameChannels || gr.Channels[0].NetIn != 0 || gr.Channels[0].NetOut != 1 {
		t.Fatalf("graph = %+v", gr)
	}
	if len(a.Notes) != 1 || !strings.Contains(a.Notes[0].Message, "visits GPU 1 twice") {
		t.Fatalf("notes = %v", a.Notes)
	}
}
