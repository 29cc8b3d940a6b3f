package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// traceEvent is the trace-event format's event object (Chrome's Trace
// Event Format, which ui.perfetto.dev reads).
type traceEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	Pid  *int            `json:"pid"`
	Tid  *int            `json:"tid"`
	Ts   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	Args json.RawMessage `json:"args"`
}

// TestTraceSchema: the trace of a 2-node tree AllReduce is trace-event JSON
// with named GPU and channel tracks, one slice per traced op with ts/dur in
// microseconds inside the call, and utilisation counters in [0, 1].
func TestTraceSchema(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib"})
	for _, tc := range []struct {
		name   string
		algo   string
		max    int
		sample bool
		coll   model.Collective
	}{{"full", "tree", 0, false, model.AllReduce}, {"sampled", "tree", 50, true, model.AllReduce}, {"nvlstree", "nvlstree", 0, false, model.AllReduce},
		// The ring and point-to-point schedules simulate node 0 alone on a
		// symmetric cluster; a trace must still show every node's GPUs.
		{"ring", "ring", 0, false, model.AllReduce}, {"alltoall", "direct", 0, false, model.AlltoAll}} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := model.ParseAlgo(tc.algo)
			var buf bytes.Buffer
			pt, info, err := e.Trace(t.Context(), sim.Request{Coll: tc.coll, Algo: &a}, 4<<20, &buf, sim.TraceOptions{MaxEvents: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				TraceEvents []traceEvent   `json:"traceEvents"`
				OtherData   map[string]any `json:"otherData"`
			}
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if got := doc.OtherData["sampled"]; got != tc.sample {
				t.Errorf("otherData.sampled = %v, want %v", got, tc.sample)
			}
			if tc.sample && (info.Every < 2 || doc.OtherData["sampling"] == nil) {
				t.Errorf("sampled trace: every %d, otherData %v", info.Every, doc.OtherData)
			}
			named := map[int]bool{}
			var slices, counters int
			endUs := pt.TimeUs * (1 + 1e-9)
			for _, ev := range doc.TraceEvents {
				if ev.Pid == nil {
					t.Fatalf("event without pid: %+v", ev)
				}
				switch ev.Ph {
				case "M":
					if ev.Name == "process_name" {
						named[*ev.Pid] = true
					}
				case "X":
					slices++
					if ev.Ts == nil || ev.Dur == nil || ev.Tid == nil || *ev.Dur < 0 || *ev.Ts < 0 || *ev.Ts+*ev.Dur > endUs {
						t.Fatalf("slice %+v outside the call's %.3f us", ev, pt.TimeUs)
					}
					if !named[*ev.Pid] {
						t.Fatalf("slice on unnamed process %d", *ev.Pid)
					}
				case "C":
					counters++
					var a struct{ Utilisation float64 }
					if err := json.Unmarshal(ev.Args, &a); err != nil || a.Utilisation < 0 || a.Utilisation > 1+1e-6 {
						t.Fatalf("counter %s args %s", ev.Name, ev.Args)
					}
				default:
					t.Fatalf("unexpected phase %q", ev.Ph)
				}
			}
			if slices != info.Slices || counters != info.Counters || counters == 0 {
				t.Errorf("%d slices, %d counters in the file; info %+v", slices, counters, info)
			}
			if tc.max > 0 && slices > tc.max+1 {
				t.Errorf("%d slices above the bound %d", slices, tc.max)
			}
			// Every GPU of both nodes has a track.
			for r := 0; r < 16; r++ {
				if !named[r] {
					t.Errorf("GPU %d has no track", r)
				}
			}
		})
	}
}

// TestTraceCollNetTracks: a CollNet trace puts each chain hop on the GPU
// that sends it and the switches' reduction on their own track. Chain hops
// were placed by their position in the chain (GPU 6 sending to itself over
// NVLink, GPU 15 without a track) and the reduction on node 0's GPUs.
func TestTraceCollNetTracks(t *testing.T) {
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x400G-ib", Set: []string{"NCCL_COLLNET_ENABLE=1"}})
	spec.Fabric = model.FabricSpec{Kind: "single-switch", SHARP: true}
	e := specEnv(t, spec)
	for _, algo := range []string{"collnetchain", "collnetdirect"} {
		a, _ := model.ParseAlgo(algo)
		var buf bytes.Buffer
		if _, _, err := e.Trace(t.Context(), sim.Request{Coll: model.AllReduce, Algo: &a}, 64<<20, &buf, sim.TraceOptions{}); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []traceEvent `json:"traceEvents"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		names := map[int]string{}
		onGPU := map[int]bool{}
		for _, ev := range doc.TraceEvents {
			switch {
			case ev.Ph == "M" && ev.Name == "process_name":
				var n struct{ Name string }
				_ = json.Unmarshal(ev.Args, &n)
				names[*ev.Pid] = n.Name
			case ev.Ph == "X":
				var x struct {
					LastLink string `json:"last_link"`
				}
				_ = json.Unmarshal(ev.Args, &x)
				if *ev.Pid < 16 {
					onGPU[*ev.Pid] = true
					self := fmt.Sprintf("node%d/nvswitch->node%d/gpu%d", *ev.Pid/8, *ev.Pid/8, *ev.Pid%8)
					if x.LastLink == self {
						t.Fatalf("%s: GPU %d sends to itself (%s)", algo, *ev.Pid, x.LastLink)
					}
				} else if ev.Name == "step latency" && names[*ev.Pid] != "switch reductions" {
					t.Errorf("%s: a reduction on %q", algo, names[*ev.Pid])
				}
			}
		}
		for r := 0; r < 16; r++ {
			if !onGPU[r] {
				t.Errorf("%s: GPU %d has no slice", algo, r)
			}
		}
	}
}
