package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestGraphSpecGraph(t *testing.T) {
	// Pattern numbers: NCCL src/include/graph.h (NCCL_TOPO_PATTERN_*).
	ring := GraphSpec{ID: 0, Pattern: 4, SpeedIntra: 12, SpeedInter: 12, TypeIntra: "SYS", TypeInter: "PIX",
		Channels: []GraphChannel{{GPUs: []int{0, 1, 2, 3}, NetIn: -1, NetOut: -1}}}
	g, err := ring.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if g.Pattern != PatternRing || g.NChannels != 1 || g.BWIntra != 12 || g.TypeIntra != PathSYS || g.TypeInter != PathPIX {
		t.Fatalf("graph = %+v", g)
	}
	for p, want := range map[int]Pattern{1: PatternTree, 2: PatternTree, 3: PatternTree, 5: PatternNVLS} {
		gs := ring
		gs.Pattern = p
		if g, err := gs.Graph(); err != nil || g.Pattern != want {
			t.Errorf("pattern %d: %v, %v", p, g.Pattern, err)
		}
	}
	bad := ring
	bad.Pattern = 6
	if _, err := bad.Graph(); err == nil || !strings.Contains(err.Error(), "collnet direct") {
		t.Errorf("collnet: %v", err)
	}
	bad = ring
	bad.TypeInter = "NODE"
	if _, err := bad.Graph(); err == nil || !strings.Contains(err.Error(), `typeinter: unknown path type "NODE"`) {
		t.Errorf("bad path: %v", err)
	}
	cg := &ChannelGraph{Graphs: []GraphSpec{{Pattern: 1}, ring}}
	if r := cg.Ring(); r == nil || r.Pattern != 4 {
		t.Errorf("Ring() = %v", r)
	}
	if (*ChannelGraph)(nil).Ring() != nil || PatternName(9) != "pattern 9" || PatternName(4) != "ring" {
		t.Error("nil Ring or PatternName")
	}
}

func TestGraphSpecJSON(t *testing.T) {
	g := GraphSpec{ID: 1, Pattern: 4, NChannels: 1, SpeedIntra: 40, TypeIntra: "NVL",
		Channels: []GraphChannel{{GPUs: []int{0, 1}, NetIn: 2, NetOut: 3}}}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"channels":[{"gpus":[0,1],"net_in":2,"net_out":3}]`) || strings.Count(string(b), `"channels"`) != 1 {
		t.Fatalf("json = %s", b)
	}
	var back GraphSpec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, g) {
		t.Fatalf("round trip: %+v, want %+v", back, g)
	}
}
