package accuracy_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/calibrate/accuracy"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
)

// casesFile is the copy of shared/data/cases.yaml (and its raw files)
// that CI has; the cases cite their sources in MANIFEST.md.
var casesFile = filepath.Join("..", "..", "ingest", "testdata", "cases.yaml")

// scaleoutFile holds the ABCI 8- and 16-node runs the project added
// (ingest/testdata/raw/MANIFEST.md rows 8a, 8b).
var scaleoutFile = filepath.Join("..", "..", "ingest", "testdata", "cases_scaleout.yaml")

// TestAccuracyHarness scores the model on every published case: the
// uncalibrated error and the calibrated one (fitted on other cases of the
// same hardware or on other sizes, never on the scored points). Run with
// -v for the table, with the targets (accuracy.Target*) met or not. Every
// corpus AlltoAll and SendRecv table is scored too. The medians over cases
// must stay within guards; degraded cases must be diagnosed when
// validated against their healthy cluster.
//
// With -short it scores shortCases only and checks each case, not the
// corpus-wide guards (medians over a subset are not the corpus's).
// falseAlarmLead is the diagnosis validate leads with on the corpus's false
// alarms whose kind is known: the EFA and 8x A100 runs match the model from
// 1 GiB and are slower below it, the 10G socket run spreads by 12% over its
// own gate sizes.
var falseAlarmLead = map[string]string{
	"aws_p4d_a100_2x8_efa":     calibrate.DiagSlowRamp,
	"thanos_a100sxm80_1x8_g8":  calibrate.DiagSlowRamp,
	"thanos_a100sxm80_1x8_mpi": calibrate.DiagSlowRamp,
	"bcm_v100_2x1_tcp_socket":  calibrate.DiagUnsteady,
}

func TestAccuracyHarness(t *testing.T) {
	var opt accuracy.Options
	if testing.Short() {
		opt.Only = shortCases
	}
	rep, cases, extra := runLogged(t, casesFile, opt)
	if len(extra) == 0 {
		t.Error("no AlltoAll or SendRecv table was added from the corpus files")
	}
	want := 0
	for _, c := range append(cases, extra...) {
		if len(opt.Only) == 0 || hasPrefix(c.ID, opt.Only) {
			want++
		}
	}
	if len(rep.Cases) != want || want == 0 {
		t.Errorf("%d cases scored, the file has %d selected (of %d)", len(rep.Cases), want, len(cases))
	}
	degraded := 0
	for _, c := range rep.Cases {
		if strings.Contains(c.Calibration, c.ID) {
			t.Errorf("%s: calibrated on itself: %s", c.ID, c.Calibration)
		}
		if len(c.Uncalibrated) == 0 {
			t.Errorf("%s: no regime scored", c.ID)
		}
		if c.Expect != "" && !c.NamesCause {
			t.Errorf("%s: validated against %s, the diagnosis %v does not name %s", c.ID, c.HealthyCluster, c.Diagnosed, c.Expect)
		}
		if c.Expect != "" {
			degraded++
		}
		// Every run that is not degraded is put through validate's gate
		// against its own cluster; a degraded one is not (it is checked
		// against the healthy cluster above).
		if deg := c.Quality == "degraded"; deg != (c.Validate == nil) {
			t.Errorf("%s (quality %s): validate outcome %v", c.ID, c.Quality, c.Validate)
		}
		if v := c.Validate; v != nil && v.Gate != "" && v.Pass != (v.Failures == 0) {
			t.Errorf("%s: validate pass %v with %d failing points", c.ID, v.Pass, v.Failures)
		}
		// A false alarm says what validate would tell the operator; where
		// the gap's kind is known it is named (README, validate section).
		if v := c.Validate; v != nil && !v.Pass && v.Gate != "" {
			want, known := falseAlarmLead[c.ID]
			if v.Leading == "" || known && v.Leading != want {
				t.Errorf("%s: false alarm leads with %q, want %q", c.ID, v.Leading, want)
			}
		}
	}
	if degraded == 0 {
		t.Error("no degraded case was validated")
	}
	if testing.Short() {
		return
	}
	// The targets are reported (and logged above); the guards below are
	// what the model reaches today and must not lose.
	for _, tg := range rep.Targets {
		if !tg.Met {
			t.Logf("target not yet met: %s: %s > %s", tg.What, tg.Value(tg.Got), tg.Value(tg.Want))
		}
		if tg.Count && tg.Got > maxFalseAlarms {
			t.Errorf("%s: %s, more than the %d of today", tg.What, tg.Value(tg.Got), maxFalseAlarms)
		}
	}
	for _, g := range guards {
		var got float64
		for _, s := range rep.Summary {
			if s.Regime == g.regime {
				got = s.UncalCaseMedian
				if g.calibrated {
					got = s.CalCaseMedian
				}
			}
		}
		if got > g.limit {
			t.Errorf("%s regime (calibrated %v): median over cases %.1f%% > %.0f%%", g.regime, g.calibrated, got*100, g.limit*100)
		}
	}
}

// runLogged runs the harness on a cases file, logs its table, and returns
// the report with the file's cases and the point-to-point cases the
// harness adds from their files.
func runLogged(t *testing.T, file string, opt accuracy.Options) (*accuracy.Report, []accuracy.Case, []accuracy.Case) {
	t.Helper()
	rep, err := accuracy.Run(context.Background(), file, opt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		t.Log(line)
	}
	cases, err := accuracy.LoadCases(file)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := accuracy.PointToPointCases(cases, filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	return rep, cases, extra
}

// maxFalseAlarms is the number of healthy corpus runs validate fails
// today (10 of 21: the multi-node ramps of ABCI A100 and V100, Snellius
// 2x4 AllReduce and 1x4 AllGather, the single-process A100 run and its
// mpirun sibling, EFA of 2021 and 10G sockets); a change that adds one
// fails.
const maxFalseAlarms = 10

// guards are the corpus-wide medians over cases the model reaches today
// (bandwidth 4.0%/4.6%, mid 6.9%/9.7%, latency 12.6%/3.9% uncalibrated/
// calibrated; calibrated with the Cauchy loss, see calibrate.Fit, on runs
// of the same launch mode), with about a point of room: a change that
// loses more fails.
var guards = []struct {
	regime     string
	calibrated bool
	limit      float64
}{
	{calibrate.RegimeBandwidth, false, 0.05},
	{calibrate.RegimeBandwidth, true, 0.035},
	{calibrate.RegimeMid, false, 0.08},
	{calibrate.RegimeMid, true, 0.105},
	{calibrate.RegimeLatency, false, 0.14},
	{calibrate.RegimeLatency, true, 0.05},
}

// TestSendRecvSteps: on one 8x H100 NVSwitch node, NCCL 2.29.2, SendRecv
// busbw doubles with the size from 64 MiB to 256 MiB at almost the same
// time, because each operation doubles its p2p channels when a channel's
// part exceeds 16 MiB (sendrecv_perf in
// nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt: 81.8, 162.5, 299.5, 355.8
// GB/s at 64, 128, 256, 512 MiB). The uncalibrated model must follow each
// step within 10%.
func TestSendRecvSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16 GiB SendRecv sweep; the full run covers it")
	}
	rep, err := accuracy.Run(context.Background(), casesFile, accuracy.Options{Only: []string{"xxrjun_h100_1x8_sendrecv"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 1 {
		t.Fatalf("%d cases scored, want the SendRecv table", len(rep.Cases))
	}
	seen := 0
	for _, p := range rep.Cases[0].Points {
		if p.Size < 64<<20 || p.Size > 1<<30 {
			continue
		}
		seen++
		t.Logf("%5d MiB: measured %6.1f GB/s, model %6.1f (%+.1f%%)", p.Size>>20, p.MeasuredBusBW, p.UncalBusBW, (p.UncalBusBW/p.MeasuredBusBW-1)*100)
		if d := p.UncalBusBW/p.MeasuredBusBW - 1; d < -0.10 || d > 0.10 {
			t.Errorf("%d MiB: model %.1f GB/s against measured %.1f", p.Size>>20, p.UncalBusBW, p.MeasuredBusBW)
		}
	}
	if seen != 5 {
		t.Errorf("%d sizes from 64 MiB to 1 GiB, want 5", seen)
	}
}

// shortCases is the subset -short scores: the 8x H100 NVSwitch node on
// three collectives (MANIFEST row 28; each calibrated on the other two) and
// both degraded cases, RoCE without GPUDirect RDMA (row 29) and a GPU and
// NIC across the CPU interconnect (ncclTests293), which must be diagnosed.
var shortCases = []string{"xxrjun_h100_1x8_all_gather", "moc_", "ncclTests293_"}

func hasPrefix(id string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// seriesOf returns a case's measured series on its configured cluster,
// from the shared corpus or the project's scale-out cases.
func seriesOf(t *testing.T, id string) calibrate.Series {
	t.Helper()
	for _, file := range []string{casesFile, scaleoutFile} {
		cases, err := accuracy.LoadCases(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.ID != id {
				continue
			}
			setup, err := accuracy.SetupFor(&c)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := c.ClusterSpec(setup.Configured)
			if err != nil {
				t.Fatal(err)
			}
			_, run, err := c.Measured(filepath.Dir(file))
			if err != nil {
				t.Fatal(err)
			}
			return calibrate.SeriesFromRun(run, c.File, spec)
		}
	}
	t.Fatalf("no case %s", id)
	return calibrate.Series{}
}

// regimeError predicts s with p and returns the statistics of a regime.
func regimeError(t *testing.T, s calibrate.Series, p sim.Params, regime string) calibrate.RegimeStats {
	t.Helper()
	cl, err := s.Spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := sim.NewEnv(cl, p)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := calibrate.CheckSeries(context.Background(), env, s, sim.EngineAnalytic, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	return sc.Regime(regime)
}

// TestTransfer: a profile fitted on one shape of a cluster predicts
// others. The limits are the validate tolerance (10%) for collectives and
// the calibrated latency target (20%); the ABCI A100 runs stop at 32 MiB,
// so their 8-32 MiB sizes (the mid regime) stand for the bandwidth regime
// and get 15%: they sit on the model's algorithm switch.
func TestTransfer(t *testing.T) {
	tests := []struct {
		name     string
		fitOn    []string
		predict  string
		regime   string
		maxError float64
	}{
		// 8x H100 NVSwitch (MANIFEST row 28): AllReduce to AllGather and ReduceScatter.
		{"AllReduce to AllGather", []string{"xxrjun_h100_1x8_all_reduce"}, "xxrjun_h100_1x8_all_gather", calibrate.RegimeBandwidth, 0.10},
		{"AllReduce to ReduceScatter", []string{"xxrjun_h100_1x8_all_reduce"}, "xxrjun_h100_1x8_reduce_scatter", calibrate.RegimeBandwidth, 0.10},
		// Snellius 2 nodes x 4 H100 over 4x NDR200 (rows 30, 31). The
		// AllReduce runs as a tree, which reaches less of the NICs than the
		// model's tree (156 GB/s busbw where the ring AllGather reaches 96%
		// of line rate): the fit absorbs the shortfall into net.eff.ib
		// (0.95 -> 0.91 against its prior), which the ring AllGather then
		// pays. Terms fitted on the tree transfer 9.1% to the ring (4.2%
		// uncalibrated; 11.2% before the terms' priors); the
		// tree's own efficiency is the missing mechanism (NCCL's tuner
		// itself derates Tree AllReduce by 0.92, nccl-facts §2.3).
		{"2-node AllReduce to AllGather", []string{"snellius_h100_2x4_all_reduce"}, "snellius_h100_2x4_all_gather", calibrate.RegimeBandwidth, 0.15},
		{"2-node AllReduce to AllGather, latency", []string{"snellius_h100_2x4_all_reduce"}, "snellius_h100_2x4_all_gather", calibrate.RegimeLatency, 0.20},
		// ABCI A100: 2 nodes (16 ranks) to 4 nodes (32 ranks), rows 7 and 8.
		// One run alone does not move net.eff.ib from its cited 0.95 to the
		// ~0.4 its ramp asks (19 prior widths; it may as well be the
		// model's ramp for that one collective): the mid regime stays at
		// the uncalibrated 110% and must not get worse than 115%. The
		// 2- and 4-node runs together do move it (below).
		{"2 nodes to 4 nodes", []string{"abci_a100_2x8"}, "abci_a100_4x8", calibrate.RegimeMid, 1.15},
		{"2 nodes to 4 nodes, latency", []string{"abci_a100_2x8"}, "abci_a100_4x8", calibrate.RegimeLatency, 0.20},
		// The ABCI scale-out: fitted on the 2- and 4-node runs together
		// (one fit over both scales), predicting the 8- and 16-node runs of
		// the same job series (ingest/testdata/raw MANIFEST rows 8a, 8b).
		// The latency regime transfers within 10%; the 64 KiB-32 MiB sizes
		// transfer to 16 nodes within 7% as the issue asks (0.4%, 59.8%
		// uncalibrated; 8.0% with the fit before the terms' priors, 12.8%
		// with the soft-L1 loss).
		{"2+4 nodes to 8 nodes, latency", []string{"abci_a100_2x8", "abci_a100_4x8"}, "abci_a100_8x8", calibrate.RegimeLatency, 0.10},
		{"2+4 nodes to 16 nodes, latency", []string{"abci_a100_2x8", "abci_a100_4x8"}, "abci_a100_16x8", calibrate.RegimeLatency, 0.10},
		{"2+4 nodes to 16 nodes, mid", []string{"abci_a100_2x8", "abci_a100_4x8"}, "abci_a100_16x8", calibrate.RegimeMid, 0.07},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && !strings.HasPrefix(tc.predict, "xxrjun_") {
				t.Skip("-short transfers on the single 8x H100 node only")
			}
			var train []calibrate.Series
			for _, id := range tc.fitOn {
				train = append(train, seriesOf(t, id))
			}
			fr, err := calibrate.Fit(context.Background(), train, nil, sim.DefaultParams(), calibrate.FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			target := seriesOf(t, tc.predict)
			before := regimeError(t, target, sim.DefaultParams(), tc.regime)
			after := regimeError(t, target, fr.Params, tc.regime)
			t.Logf("%s -> %s, %s regime: median |error| %.1f%% uncalibrated, %.1f%% calibrated (fitted %d terms)",
				strings.Join(tc.fitOn, "+"), tc.predict, tc.regime, before.MedianAbs*100, after.MedianAbs*100, len(fr.Fitted))
			if after.Points == 0 || after.MedianAbs > tc.maxError {
				t.Errorf("calibrated median |error| %.1f%% over %d points, want <= %.0f%%", after.MedianAbs*100, after.Points, tc.maxError*100)
			}
		})
	}
}

// TestTransferToSixteenNodes: fitted on the 2-node Snellius AllGather
// (ring, NIC-bound), the profile predicts 16 nodes: ring AllGather busbw
// stays at the per-node NIC rate whatever the node count (nccl-facts §8:
// multi-node ring busbw ~ the NIC sum per node), so the 16-node plateau
// must be within 10% of the 2-node measured plateau (97.65 GB/s at 8 GiB,
// cases.yaml snellius_h100_2x4_all_gather).
func TestTransferToSixteenNodes(t *testing.T) {
	train := seriesOf(t, "snellius_h100_2x4_all_gather")
	fr, err := calibrate.Fit(context.Background(), []calibrate.Series{train}, nil, sim.DefaultParams(), calibrate.FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := train.Spec
	spec.Nodes = 16
	cl, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := sim.NewEnv(cl, fr.Params)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := env.Sweep(context.Background(), sim.Request{Coll: model.AllGather, Sizes: []model.Bytes{8 << 30}, ElemSize: 4, Engine: sim.EngineAnalytic})
	if err != nil {
		t.Fatal(err)
	}
	const measured2Node = 97.65
	got := pts[0].BusBW
	t.Logf("16 nodes x 4 H100, all_gather 8 GiB: %.1f GB/s busbw (2 nodes measured %.2f)", got, measured2Node)
	if d := got/measured2Node - 1; d < -0.10 || d > 0.10 {
		t.Errorf("16-node busbw %.1f GB/s is %+.0f%% from the 2-node plateau", got, d*100)
	}
}

// TestTargetAndValidateWords: a count target prints a number of cases, a
// busbw target a percentage; a false alarm says how many gate points
// failed and the worst error.
func TestTargetAndValidateWords(t *testing.T) {
	if got := (accuracy.Target{Count: true}).Value(3); got != "3" {
		t.Errorf("count target: %q", got)
	}
	if got := (accuracy.Target{}).Value(0.123); got != "12.3%" {
		t.Errorf("busbw target: %q", got)
	}
	v := &accuracy.ValidateOutcome{Gate: "bandwidth", GatePoints: 7, Failures: 2, Worst: 0.171, Tolerance: 0.1}
	if got, want := v.String(), "FALSE ALARM (2 of 7 bandwidth points beyond 10%, worst +17.1%)"; got != want {
		t.Errorf("false alarm: %q, want %q", got, want)
	}
	v.Failures, v.Pass, v.Worst = 0, true, -0.06
	if got, want := v.String(), "pass (bandwidth, worst -6.0%)"; got != want {
		t.Errorf("pass: %q, want %q", got, want)
	}
	var none *accuracy.ValidateOutcome
	if none.String() != "-" {
		t.Errorf("no outcome: %q", none.String())
	}
}
