package calibrate

import (
	"math"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// The prior of a fit: each term starts at its default, which is a cited
// figure or a stated assumption (sim.Term.Source), and the fit treats that
// default as a measurement of its own, with an uncertainty set by what kind
// of figure it is. A term the data determine well moves as far as the data
// say; one they barely inform, or inform only in combination with another
// term, stays near its default instead of drifting to wherever the other
// terms leave it (before, the prior was 3 log units wide for every term and
// such combinations were resolved by which term happened to be chosen
// first: on the RTX 2080 Ti runs pcie.eff.3 went to +21% and
// shm.eff.lockstep to -22%, which the AlltoAll, using pcie.eff.3 with
// shm.eff.twoway, paid with a 15% error).
//
// The widths, in log units (a width of 0.05 is about 5%):
//
//   - achieved fractions of a line rate (unit "fraction"), cited: 0.05. The
//     cited figures are achieved rates measured on one or two systems (370
//     of 450 GB/s NVLink4 ring busbw, 46-48 of 50 GB/s per NDR NIC); healthy
//     runs of other systems scatter around them by a few percent (the
//     corpus' uncalibrated bandwidth-regime median is 4%).
//   - the same, assumed: 0.15 (no measurement; a factor of the order of the
//     spread between link kinds, 0.77-0.95).
//   - latencies (unit "us"), cited: 0.5. The cited values are NCCL's own
//     tuning constants (tuning.cc baseLat, hwLat) plus a launch overhead,
//     not measurements of the system; measured small-message times differ
//     from them by 10-50% (the corpus' uncalibrated latency-regime errors
//     are 3-50% per case), so a factor of 1.6 is one width.
//   - the same, assumed: 1.0.
//   - ceilings and other quantities (GB/s, MB, bytes), cited: 0.15 (most are
//     one published peak or one run); assumed: 0.5.
//
// A term whose default is 0 (an extra latency NCCL's constants already
// cover) has no log scale; its prior is on the value itself, 5 µs wide for
// a latency (the size of NCCL's per-hop constants, 0.6-14 µs), and 0.05 of
// its bounds' span otherwise. The prior is a Cauchy of that width (see
// priorNu).
const (
	priorFractionCited   = 0.05
	priorFractionAssumed = 0.15
	priorLatencyCited    = 0.5
	priorLatencyAssumed  = 1.0
	priorOtherCited      = 0.15
	priorOtherAssumed    = 0.5
	priorZeroLatencyUs   = 5.0
	priorZeroSpan        = 0.05
)

// termPrior is one term's prior: centred on Default with width SD, in log
// units, or in the term's own unit when Absolute (a default of 0).
type termPrior struct {
	Default, SD float64
	Absolute    bool
}

// priorOf returns a term's prior from its unit and the kind of its source,
// centred on its value in the parameters the fit starts from (the default,
// unless the caller starts from other values).
func priorOf(t sim.Term) termPrior {
	assumed := t.Source.Kind == model.SourceAssumption
	centre := *t.Value
	if centre == 0 {
		if t.Unit == "us" {
			return termPrior{Default: 0, SD: priorZeroLatencyUs, Absolute: true}
		}
		return termPrior{Default: 0, SD: math.Max(priorZeroSpan*(t.Hi-t.Lo), 1e-9), Absolute: true}
	}
	pick := func(cited, assumedSD float64) float64 {
		if assumed {
			return assumedSD
		}
		return cited
	}
	switch t.Unit {
	case "fraction":
		return termPrior{Default: centre, SD: pick(priorFractionCited, priorFractionAssumed)}
	case "us":
		return termPrior{Default: centre, SD: pick(priorLatencyCited, priorLatencyAssumed)}
	}
	return termPrior{Default: centre, SD: pick(priorOtherCited, priorOtherAssumed)}
}

// z is the prior residual of value v: its distance from the default in
// widths. Its square is the prior's contribution to the objective.
func (p termPrior) z(v float64) float64 {
	if p.Absolute {
		return (v - p.Default) / p.SD
	}
	if v <= 0 || p.Default <= 0 {
		return 0
	}
	return math.Log(v/p.Default) / p.SD
}

// priorNu is the degrees of freedom of the prior's Student-t: near the
// default its cost is that of the normal of width SD; far out it grows
// only as the log, so runs that agree on a value many widths away still
// move the term there (the ABCI A100 runs, with GPUDirect RDMA limited by
// NCCL_NET_GDR_LEVEL=2, reach about 0.4 of the IB line rate in the ramp,
// 19 widths from net.eff.ib's 0.95; fitted on the 2- and 4-node runs
// together the 16-node run's mid regime is within 0.4%, against 74% with
// a normal prior). One degree of freedom is the Cauchy, as the data's
// loss; with the normal the corpus' calibrated bandwidth median is the
// same (3.2%).
const priorNu = 1.0

// resid is the prior's residual at v: its square is the prior's cost,
// nu log(1 + z^2/nu) (z^2 near the default).
func (p termPrior) resid(v float64) float64 {
	z := p.z(v)
	return math.Copysign(math.Sqrt(priorNu*math.Log1p(z*z/priorNu)), z)
}

// perLog converts a sensitivity to log(v) at value v into one to the
// prior's standardised coordinate z: d r / d z = d r / d log v * d log v / d z.
func (p termPrior) perLog(v float64) float64 {
	if p.Absolute {
		if v <= 0 {
			return 0
		}
		return p.SD / v
	}
	return p.SD
}

// PriorWidth returns the width of a term's prior in a fit and whether it
// is in the term's unit (true: a default of 0) rather than in log units.
// ok is false for a name that is not a term.
func PriorWidth(name string) (sd float64, absolute, ok bool) {
	p := sim.DefaultParams()
	for _, t := range p.Terms() {
		if t.Name == name {
			tp := priorOf(t)
			return tp.SD, tp.Absolute, true
		}
	}
	return 0, false, false
}
