package model

import (
	"encoding/json"
	"fmt"
)

// ChannelGraph is an NCCL graph file: the channels NCCL's topology search
// found (NCCL_GRAPH_DUMP_FILE) or is told to use (NCCL_GRAPH_FILE), one
// GraphSpec per <graph>. It is plain data; ingest reads it from the
// <graphs><graph ...><channel><net/><gpu/>...</channel></graph></graphs>
// XML NCCL writes (src/graph/search.cc, ncclTopoGetXmlFromGraphs).
type ChannelGraph struct {
	Graphs []GraphSpec `json:"graphs"`
}

// GraphSpec is one <graph> element as written.
type GraphSpec struct {
	// ID is the graph's id attribute (NCCL writes its graphs in algorithm
	// order: ring, tree, then CollNet and NVLS ones).
	ID int `json:"id"`
	// Pattern is the search pattern (NCCL_TOPO_PATTERN_* in
	// src/include/graph.h): 1 balanced tree, 2 split tree, 3 tree, 4 ring,
	// 5 NVLS, 6 CollNet direct.
	Pattern int `json:"pattern"`
	// CrossNIC is the crossnic attribute (0 off, 1 on, 2 allowed).
	CrossNIC int `json:"crossnic"`
	// NChannels is the nchannels attribute as written; len(Channels) is
	// what the file lists.
	NChannels int `json:"nchannels"`
	// SpeedIntra and SpeedInter are the per-channel bandwidths NCCL's search
	// settled on, GB/s (speedintra/speedinter; bwintra/bwinter in newer
	// releases); LatencyInter is latencyinter, microseconds.
	SpeedIntra   float64 `json:"speed_intra_gbps"`
	SpeedInter   float64 `json:"speed_inter_gbps"`
	LatencyInter float64 `json:"latency_inter_us"`
	// TypeIntra and TypeInter are the farthest path types inside and
	// between nodes as written ("NVL", "PIX", "SYS", ...).
	TypeIntra string `json:"type_intra"`
	TypeInter string `json:"type_inter"`
	// SameChannels is the samechannels attribute.
	SameChannels bool `json:"same_channels"`
	// Channels are the channels in file order: the <gpu dev> values in
	// order, and the first and last <net dev> as NetIn and NetOut (-1 when
	// the channel has none, as on a single node). The indices are CUDA
	// device and NCCL net device numbers.
	Channels []GraphChannel `json:"channels"`
}

// PatternName names an NCCL search pattern number ("ring", "tree", ...),
// or "pattern N" for a value NCCL does not define.
func PatternName(p int) string {
	switch p {
	case 1:
		return "balanced tree"
	case 2:
		return "split tree"
	case 3:
		return "tree"
	case 4:
		return "ring"
	case 5:
		return "nvls"
	case 6:
		return "collnet direct"
	}
	return fmt.Sprintf("pattern %d", p)
}

// Graph converts g to the Graph the search emulation produces, so that a
// graph file can stand in for the search: patterns 1-3 become PatternTree, 4
// PatternRing, 5 PatternNVLS. Pattern 6 (CollNet) and unknown path type
// names are errors. The channels are shared with g, not copied.
func (g GraphSpec) Graph() (Graph, error) {
	out := Graph{NChannels: len(g.Channels), BWIntra: GBps(g.SpeedIntra), BWInter: GBps(g.SpeedInter), Channels: g.Channels}
	switch g.Pattern {
	case 1, 2, 3:
		out.Pattern = PatternTree
	case 4:
		out.Pattern = PatternRing
	case 5:
		out.Pattern = PatternNVLS
	default:
		return Graph{}, fmt.Errorf("graph %d: %s has no collsim counterpart", g.ID, PatternName(g.Pattern))
	}
	var err error
	if out.TypeIntra, err = parseGraphPath(g.TypeIntra); err != nil {
		return Graph{}, fmt.Errorf("graph %d: typeintra: %w", g.ID, err)
	}
	if out.TypeInter, err = parseGraphPath(g.TypeInter); err != nil {
		return Graph{}, fmt.Errorf("graph %d: typeinter: %w", g.ID, err)
	}
	return out, nil
}

// parseGraphPath reads a path type name as graph files write it; empty is LOC.
func parseGraphPath(s string) (PathType, error) {
	if s == "" {
		return PathLOC, nil
	}
	for i, n := range pathNames {
		if n == s {
			return PathType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown path type %q", s)
}

// Ring returns the first graph with the ring pattern, or nil.
func (c *ChannelGraph) Ring() *GraphSpec {
	if c == nil {
		return nil
	}
	for i := range c.Graphs {
		if c.Graphs[i].Pattern == 4 {
			return &c.Graphs[i]
		}
	}
	return nil
}

// graphChannelJSON is GraphChannel's JSON form in a graph file's record.
type graphChannelJSON struct {
	GPUs   []int `json:"gpus"`
	NetIn  int   `json:"net_in"`
	NetOut int   `json:"net_out"`
}

// graphSpecJSON is GraphSpec with its channels in graphChannelJSON form.
type graphSpecJSON struct {
	graphSpecFields
	Channels []graphChannelJSON `json:"channels"`
}

// graphSpecFields is GraphSpec without its methods (so that encoding it
// does not recurse into MarshalJSON).
type graphSpecFields GraphSpec

// MarshalJSON writes the graph with lower-case channel keys (gpus,
// net_in, net_out).
func (g GraphSpec) MarshalJSON() ([]byte, error) {
	j := graphSpecJSON{graphSpecFields: graphSpecFields(g)}
	j.graphSpecFields.Channels = nil
	j.Channels = make([]graphChannelJSON, len(g.Channels))
	for i, c := range g.Channels {
		j.Channels[i] = graphChannelJSON{GPUs: c.GPUs, NetIn: c.NetIn, NetOut: c.NetOut}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (g *GraphSpec) UnmarshalJSON(b []byte) error {
	var j graphSpecJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = GraphSpec(j.graphSpecFields)
	g.Channels = make([]GraphChannel, len(j.Channels))
	for i, c := range j.Channels {
		g.Channels[i] = GraphChannel{GPUs: c.GPUs, NetIn: c.NetIn, NetOut: c.NetOut}
	}
	return nil
}
