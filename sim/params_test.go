package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestTermsHaveSources: every model term, the per-channel ceilings
// included, cites a public figure or states an assumption with its
// reasoning. Deleting any term's source fails here.
func TestTermsHaveSources(t *testing.T) {
	p := DefaultParams()
	ts := p.Terms()
	if len(ts) == 0 {
		t.Fatal("no terms")
	}
	seen := map[string]bool{}
	for _, term := range ts {
		if seen[term.Name] {
			t.Errorf("%s listed twice", term.Name)
		}
		seen[term.Name] = true
		if err := term.Source.Check(); err != nil {
			t.Errorf("%s: %v", term.Name, err)
		}
		if got := TermSource(term.Name); got == "" || got != term.Source.String() {
			t.Errorf("TermSource(%q) = %q, want the term's own source %q", term.Name, got, term.Source.String())
		}
		if term.Doc == "" || term.Unit == "" {
			t.Errorf("%s: doc %q, unit %q", term.Name, term.Doc, term.Unit)
		}
		if v := *term.Value; v != term.Default || v < term.Lo || v > term.Hi {
			t.Errorf("%s = %g: default %g, bounds [%g, %g]", term.Name, v, term.Default, term.Lo, term.Hi)
		}
	}
	if TermSource("no.such.term") != "" {
		t.Error("an unknown term has a source")
	}
}

// TestCeilingsAreTerms: every per-channel ceiling is a term, so it is
// listed and can be fitted.
func TestCeilingsAreTerms(t *testing.T) {
	p := DefaultParams()
	for pr := model.Proto(0); pr < model.NumProtos; pr++ {
		for a := 0; a < model.NumArchs; a++ {
			name := "chan.cap." + protoKeys[pr] + "." + archKeys[a]
			if err := p.Set(name, 3); err != nil {
				t.Fatal(err)
			}
			if p.ChannelCapGBps[pr][a] != 3 {
				t.Errorf("%s does not set ChannelCapGBps[%d][%d]", name, pr, a)
			}
		}
	}
}

// TestDefaultsReadNCCLConstants: the defaults that are NCCL's constants
// are read from model's one table, so changing a constant there changes
// the default (and every other user of it).
func TestDefaultsReadNCCLConstants(t *testing.T) {
	p := DefaultParams()
	for c := model.LatClass(0); c < model.NumLatClasses; c++ {
		for pr := model.Proto(0); pr < model.NumProtos; pr++ {
			if got, want := p.StepLatUs[c][pr], model.HWLatUs(c, model.AlgoRing, pr); got != want {
				t.Errorf("lat.step.%s.%s = %g, NCCL's hwLat is %g", classKeys[c], protoKeys[pr], got, want)
			}
		}
	}
	for pr := model.Proto(0); pr < model.NumProtos; pr++ {
		if got, want := p.BaseLatUs[pr], model.BaseLatUs(model.AlgoRing, pr)+launchOverheadUs; got != want {
			t.Errorf("lat.base.%s = %g, want %g", protoKeys[pr], got, want)
		}
	}
	for a := 0; a < model.NumArchs; a++ {
		if got, want := p.ChannelCapGBps[model.ProtoLL128][a], model.PerChMaxRingLL128BW(a); got != want {
			t.Errorf("LL128 ceiling arch %d = %g, NCCL's perChMaxRingLL128Bw is %g", a, got, want)
		}
		if got, want := p.ChannelCapGBps[model.ProtoSimple][a], model.PerChMaxTreeBW(a, 0); got != want {
			t.Errorf("Simple ceiling arch %d = %g, NCCL's perChMaxTreeBw is %g", a, got, want)
		}
	}
	if got, want := p.NVLSLatUs, model.HWLatUs(model.LatNVLink, model.AlgoNVLS, model.ProtoSimple)+launchOverheadUs; got != want {
		t.Errorf("nvls.lat.us = %g, want %g", got, want)
	}
}

// ibLocalOverhead is InfiniBand's per-packet header on a local link: LRH 8 +
// BTH 12 + ICRC 4 + VCRC 2 bytes (IBTA; fabric-facts §4 compares it with
// RoCEv2's 82).
const ibLocalOverhead = 26

// TestRoCEEffDefault checks net.eff.roce against where it comes from: it is
// taken equal to InfiniBand's 0.95, which nccl-tests#290 measures (46-48 of
// 50 GB/s per NDR NIC), and RoCEv2's extra headers at MTU 4096 must cost
// less than the spread of that figure for the assumption to hold.
func TestRoCEEffDefault(t *testing.T) {
	p := DefaultParams()
	roce, _ := p.Get("net.eff.roce")
	ib, _ := p.Get("net.eff.ib")
	if roce != 0.95 || roce != ib {
		t.Fatalf("net.eff.roce = %g, net.eff.ib = %g: the assumption is RoCE = IB = 0.95", roce, ib)
	}
	if lo, hi := 46.0/50, 48.0/50; ib < lo || ib > hi {
		t.Errorf("net.eff.ib = %g is outside nccl-tests#290's 46-48 of 50 GB/s [%g, %g]", ib, lo, hi)
	}
	const mtu = 4096.0
	roceWire := mtu / (mtu + p.Physics.HdrRoCE)
	ibWire := mtu / (mtu + ibLocalOverhead)
	diff := 1 - roceWire/ibWire
	if spread := (48.0 - 46.0) / 50; diff <= 0 || diff >= spread {
		t.Errorf("RoCE's header cost %.4f against IB is not inside the IB figure's spread %.2f", diff, spread)
	}
	if math.Abs(roceWire-0.980) > 0.0005 || math.Abs(ibWire-0.994) > 0.0005 {
		t.Errorf("payload shares %.4f (RoCE) and %.4f (IB) do not match the 98.0%% and 99.4%% the source states", roceWire, ibWire)
	}
	src := TermSource("net.eff.roce")
	if !strings.HasPrefix(src, "assumption: ") || !strings.Contains(src, "98.0%") || !strings.Contains(src, "99.4%") {
		t.Errorf("net.eff.roce source %q does not state the assumption and its figures", src)
	}
}
