package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// The run mode's terms. On virtual machines every call pays vm.lat.us on
// top of the base latency: Env.baseLat adds it, so the DES has it in its
// base delay op and the analytic engine in its base term. When one host
// thread drives the G GPUs of a node it launches their G kernels one after
// the other inside ncclGroupStart/End; nccl-tests (and any loop of calls
// without a host synchronisation) issues the next call's launches while
// the GPUs still run the last, so the launches hide behind the GPU time
// until G launches take longer than a call: the call period is then
// G x launch.single.us. Predict applies that floor to either engine's time
// (launchFloor), in one place.

// The floor's evidence: every single-process run of the corpus is flat at
// small sizes, where the GPU time still grows, at G launches' worth:
//   - thanos pair, one 8x A100-SXM4-80GB NVSwitch machine
//     (nccltests_a100sxm80_1x8_nvswitch_blog-thanos_1.txt): -g 8 measures
//     38.4-42.1 us from 8 B to 16 KiB (median 39.3 = 8 x 4.9), while
//     mpirun -np 8 on the same machine grows from 17.9 to 26.2 us;
//   - Snellius 4x H100 -g 4, NCCL 2.22.3
//     (nccltests_h100sxm_1x4_nvlink_snellius_1.txt and _allgather_2.txt):
//     AllReduce and AllGather both flat at 16.6-17.3 us from 4 B to 32 KiB
//     (4 x 4.2), though the model's GPU time of AllGather is 2 us below
//     AllReduce's.
//
// 4.5 us lies between the two (A100 host 4.9, H100 host 4.2): 9% under the
// first, 6% over the second.
const (
	launchSingleUs     = 4.5
	launchSingleReason = "fitted on two runs: 8x A100 -g 8 flat at 39.3 us below 16 KiB = 8 x 4.9 (mpirun -np 8 on the same machine: 17.9-26.2 us), 4x H100 -g 4 AllReduce and AllGather both flat at ~16.9 us = 4 x 4.2; " +
		"one host thread launches the G kernels of a call one after the other, and back-to-back calls overlap the launches with the GPU work, so a call takes at least G launches"
	vmLatUs     = 2
	vmLatReason = "no public pair of runs of one machine on bare metal and in a VM with small-message numbers to fit (VM reports such as nccl#1017 and nccl#949 lack the bare-metal twin); " +
		"with the GPUs and NICs passed through, kernel launches and RDMA do not trap to the hypervisor, so what remains is interrupt and timer virtualisation and vCPU scheduling of the launching and proxy threads, " +
		"of the order of one VM exit and re-entry (~1-2 us) per call; kept small so that --vm never dominates a prediction, and calibrate fits it from a VM run"
)

func runModeTerms() []termDef {
	return []termDef{
		{"launch.single.us", func(p *Params) *float64 { return &p.LaunchSingleUs }, launchSingleUs, 0.1, 100, "us",
			"host time of one kernel launch when one thread drives a node's G GPUs (--launch single-process): a call takes at least G of them",
			model.Cite("thanos_a100sxm80_1x8_g8 and _mpi cases; snellius_h100_1x4 cases", launchSingleReason), false},
		{"vm.lat.us", func(p *Params) *float64 { return &p.VMLatUs }, vmLatUs, 0, 200, "us",
			"extra latency of one call when the hosts are virtual machines (--vm)",
			model.Assume(vmLatReason), false},
	}
}

// runMode is what the cluster's run mode does to every call: lat, added to
// the base latency (vm.lat.us on virtual machines), and floor, the least
// time of a call (G x launch.single.us when one thread launches the
// kernels of a node's G > 1 GPUs). Both are 0 for a process per GPU on
// bare metal, the default.
func runMode(c *model.Cluster, p Params) (lat, floor model.Time, err error) {
	r := c.Spec.Run
	if err := r.Validate(); err != nil {
		return 0, 0, fmt.Errorf("sim: run: %w", err)
	}
	if r.VM {
		lat = model.Micros(p.VMLatUs)
	}
	if g := r.SerialLaunches(c.GPUsPerNode()); g > 1 {
		floor = model.Micros(float64(g) * p.LaunchSingleUs)
	}
	return lat, floor, nil
}

// launchFloor raises a call's time t to the run mode's floor, and says so.
func (e *Env) launchFloor(t model.Time) (model.Time, string) {
	if t >= e.runFloor {
		return t, ""
	}
	g := e.Cluster.Spec.Run.SerialLaunches(e.Cluster.GPUsPerNode())
	return e.runFloor, fmt.Sprintf("host-bound: one thread launches the %d kernels of a call (%d x launch.single.us = %.1f us)", g, g, e.runFloor.Microseconds())
}
