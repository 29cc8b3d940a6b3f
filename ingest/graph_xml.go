package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
)

// NCCL graph files (NCCL_GRAPH_DUMP_FILE writes one, NCCL_GRAPH_FILE reads
// one; src/graph/search.cc):
//
//	<graphs version="1">
//	  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="12" speedinter="12"
//	         latencyinter="0" typeintra="SYS" typeinter="PIX" samechannels="0">
//	    <channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel>
//
// Newer NCCL releases spell the speeds bwintra/bwinter.

// maxGraphDev bounds the device indices of a graph file.
const maxGraphDev = 1 << 16

func parseGraphXML(name string, root *xnode) (*Artifact, error) {
	cg := &model.ChannelGraph{}
	var notes []Note
	for _, g := range root.kids {
		if g.name != "graph" {
			continue
		}
		if len(cg.Graphs) >= maxListItems {
			break
		}
		gs, err := graphSpec(name, g)
		if err != nil {
			return nil, err
		}
		if gs.NChannels != len(gs.Channels) {
			notes = append(notes, Note{Line: g.line, Message: fmt.Sprintf("graph %d says nchannels=%d but lists %d channels; the listed ones are used", gs.ID, gs.NChannels, len(gs.Channels))})
		}
		for ci, ch := range gs.Channels {
			seen := map[int]bool{}
			for _, d := range ch.GPUs {
				if seen[d] {
					notes = append(notes, Note{Line: g.line, Message: fmt.Sprintf("graph %d channel %d visits GPU %d twice", gs.ID, ci, d)})
					break
				}
				seen[d] = true
			}
		}
		cg.Graphs = append(cg.Graphs, gs)
	}
	if len(cg.Graphs) == 0 {
		return nil, errNoData(name, root.line, "NCCL graph file without any <graph>")
	}
	return &Artifact{Kind: KindGraphXML, Graph: cg, Notes: notes}, nil
}

func graphSpec(name string, g *xnode) (model.GraphSpec, error) {
	var gs model.GraphSpec
	ints := []struct {
		attr string
		dst  *int
		need bool
	}{{"id", &gs.ID, false}, {"pattern", &gs.Pattern, true}, {"crossnic", &gs.CrossNIC, false}, {"nchannels", &gs.NChannels, false}}
	for _, a := range ints {
		v := g.attr(a.attr)
		if v == "" {
			if a.need {
				return gs, errNoData(name, g.line, "<graph> without a %s attribute", a.attr)
			}
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxGraphDev {
			return gs, errNoData(name, g.line, "<graph %s=%q>: not a count", a.attr, v)
		}
		*a.dst = n
	}
	floats := []struct {
		attrs []string
		dst   *float64
	}{{[]string{"speedintra", "bwintra"}, &gs.SpeedIntra}, {[]string{"speedinter", "bwinter"}, &gs.SpeedInter}, {[]string{"latencyinter"}, &gs.LatencyInter}}
	for _, f := range floats {
		for _, a := range f.attrs {
			v := g.attr(a)
			if v == "" {
				continue
			}
			x, ok := parseNum(v)
			if !ok || x < 0 || x > 1e6 {
				return gs, errNoData(name, g.line, "<graph %s=%q>: not a bandwidth or latency", a, v)
			}
			*f.dst = x
		}
	}
	gs.TypeIntra, gs.TypeInter = strings.ToUpper(g.attr("typeintra")), strings.ToUpper(g.attr("typeinter"))
	gs.SameChannels = g.attr("samechannels") == "1"
	for _, c := range g.kids {
		if c.name != "channel" {
			continue
		}
		if len(gs.Channels) >= maxListItems {
			break
		}
		ch := model.GraphChannel{NetIn: -1, NetOut: -1}
		nets := 0
		for _, h := range c.kids {
			if h.name != "gpu" && h.name != "net" {
				continue
			}
			v := h.attr("dev")
			d, err := strconv.Atoi(v)
			if err != nil || d < 0 || d > maxGraphDev {
				return gs, errNoData(name, h.line, "<%s dev=%q> in graph %d: not a device index", h.name, v, gs.ID)
			}
			switch {
			case h.name == "net" && nets == 0:
				ch.NetIn, ch.NetOut = d, d
				nets++
			case h.name == "net":
				ch.NetOut = d
				nets++
			case len(ch.GPUs) < maxListItems:
				ch.GPUs = append(ch.GPUs, d)
			}
		}
		if len(ch.GPUs) == 0 {
			return gs, errNoData(name, c.line, "<channel> of graph %d without any <gpu>", gs.ID)
		}
		gs.Channels = append(gs.Channels, ch)
	}
	if len(gs.Channels) == 0 {
		return gs, errNoData(name, g.line, "graph %d lists no <channel>", gs.ID)
	}
	if g.attr("nchannels") == "" {
		gs.NChannels = len(gs.Channels)
	}
	return gs, nil
}

// LoadGraph reads an NCCL graph file (NCCL_GRAPH_FILE or
// NCCL_GRAPH_DUMP_FILE). Another kind of file is an error naming what it is.
func LoadGraph(path string) (*model.ChannelGraph, error) {
	a, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	if a.Graph == nil {
		return nil, fmt.Errorf("calibrate: %s: is %s output, not an NCCL graph file", path, a.Kind)
	}
	return a.Graph, nil
}
