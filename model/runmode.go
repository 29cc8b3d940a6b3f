package model

import (
	"fmt"
	"strings"
)

// Launch says how the application's processes drive the GPUs, which sets
// how many kernel launches one host thread issues per collective call.
type Launch string

// Launch modes.
const (
	// LaunchProcessPerGPU is one process (one launching thread) per GPU,
	// as mpirun -np N with nccl-tests -g 1, torchrun or Slurm with one task
	// per GPU run: each thread launches one kernel per call, concurrently
	// with the others. It is the default.
	LaunchProcessPerGPU Launch = "process-per-gpu"
	// LaunchSingleProcess is one process (one thread) per node driving all
	// of its GPUs, as nccl-tests -g G runs: the thread launches the G
	// kernels of a call one after the other inside ncclGroupStart/End, so
	// the call pays G-1 launches more than with a process per GPU.
	LaunchSingleProcess Launch = "single-process"
)

// Launches lists the launch modes, the default first.
func Launches() []Launch { return []Launch{LaunchProcessPerGPU, LaunchSingleProcess} }

func launchList() string {
	var s []string
	for _, l := range Launches() {
		s = append(s, string(l))
	}
	return strings.Join(s, ", ")
}

// ParseLaunch reads a launch mode name (case and surrounding spaces
// ignored); an unknown or empty one is an error naming it and listing the
// known names.
func ParseLaunch(s string) (Launch, error) {
	l := Launch(strings.ToLower(strings.TrimSpace(s)))
	for _, k := range Launches() {
		if k == l {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown launch mode %q (known: %s)", s, launchList())
}

// RunSpec is how the collective runs on the cluster's hosts rather than
// what the hardware is: the launch mode and whether the hosts are virtual
// machines. The zero value is process-per-gpu on bare metal.
type RunSpec struct {
	// Launch is a Launches name; empty means process-per-gpu.
	Launch string `yaml:"launch,omitempty"`
	// VM marks hosts that are virtual machines (GPUs and NICs passed
	// through), which pay a per-call cost bare metal does not.
	VM bool `yaml:"vm,omitempty"`
	// ThreadGPUs is how many GPUs one host thread drives in the
	// single-process mode (nccl-tests -g N: nGpus is per thread, and
	// nThread threads launch at once); 0 means every GPU of the node.
	ThreadGPUs int `yaml:"thread_gpus,omitempty"`
}

// Mode returns the launch mode, process-per-gpu when Launch is empty. An
// unknown name is an error (see ParseLaunch).
func (r RunSpec) Mode() (Launch, error) {
	if strings.TrimSpace(r.Launch) == "" {
		return LaunchProcessPerGPU, nil
	}
	return ParseLaunch(r.Launch)
}

// Validate reports an unknown launch mode.
func (r RunSpec) Validate() error {
	if _, err := r.Mode(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if r.ThreadGPUs < 0 {
		return fmt.Errorf("thread_gpus: must not be negative, got %d", r.ThreadGPUs)
	}
	return nil
}

// SerialLaunches is how many kernel launches one host thread issues, one
// after the other, per collective call on a node of g GPUs: g when one
// process drives the node's GPUs, 1 otherwise (and for an invalid spec,
// which Validate reports).
func (r RunSpec) SerialLaunches(g int) int {
	if m, err := r.Mode(); err == nil && m == LaunchSingleProcess && g > 1 {
		if r.ThreadGPUs > 0 && r.ThreadGPUs < g {
			return r.ThreadGPUs
		}
		return g
	}
	return 1
}

// String is the run mode as flags give it: "process-per-gpu",
// "single-process", with ", vm" when VM is set.
func (r RunSpec) String() string {
	m, err := r.Mode()
	s := string(m)
	if err != nil {
		s = r.Launch
	}
	if r.ThreadGPUs > 0 && m == LaunchSingleProcess {
		s += fmt.Sprintf(" (%d GPUs per thread)", r.ThreadGPUs)
	}
	if r.VM {
		s += ", vm"
	}
	return s
}
