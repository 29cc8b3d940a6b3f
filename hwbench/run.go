package hwbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collsim/collsim/model"
)

// Probes are the probe names in their default order.
var Probes = []string{"topo", "copy", "p2p", "nvbw", "nccl", "gdr", "rdma"}

// Options configures a run. Zero values take the defaults of
// DefaultOptions where noted.
type Options struct {
	// Probes to run, in order (default Probes).
	Probes []string
	// Out is the JSON report path; "" writes nothing.
	Out string
	// NCCLText is where the nccl probe's nccl-tests text goes; "" writes
	// nothing (the CLI defaults it to Out + ".nccl-tests.txt").
	NCCLText string
	// MinBytes, MaxBytes and StepFactor are the nccl sweep (nccl-tests -b,
	// -e, -f).
	MinBytes, MaxBytes model.Bytes
	StepFactor         int
	// Iters and Warmup are the timed and untimed repetitions of every
	// measurement (nccl-tests -n and -w).
	Iters, Warmup int
	// Collectives are the nccl probe's sweeps, in order (nil: every one
	// of NCCLCollectives).
	Collectives []model.Collective
	// Check is nccl-tests' -c: 1 checks every size of the nccl sweeps on
	// known data (the #wrong columns), 0 does not.
	Check int
	// CopyBytes is the size of one copy in the copy and p2p probes.
	CopyBytes model.Bytes
	// Rank and NRanks place this process in a multi-process run (NRanks 0
	// or 1: a single process); Coordinator is rank 0's "host:port".
	Rank, NRanks int
	Coordinator  string
	// BootTimeout bounds how long ranks wait for each other to connect
	// (default 5 minutes).
	BootTimeout time.Duration
	// Progress receives one line per finished step (nil: none).
	Progress io.Writer
	// Now is the clock for the records (nil: time.Now).
	Now func() time.Time
	// Pid is the process id the device lists show (0: os.Getpid()).
	Pid int
	// Tool names the program in the report ("collsim hwbench 0.1.0").
	Tool string
	// BackendName is recorded in the report ("native", "fake").
	BackendName string
	// Getenv reads the launcher's variables (SLURM_LOCALID,
	// OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK) and NCCL's settings (nil:
	// os.Getenv).
	Getenv func(string) string
}

// DefaultOptions are the defaults of the collsim hwbench command.
func DefaultOptions() Options {
	return Options{
		Probes: append([]string(nil), Probes...), Out: "hwbench.json",
		MinBytes: 8, MaxBytes: model.GiB, StepFactor: 2, Iters: 20, Warmup: 5, Check: 1,
		CopyBytes: 64 * model.MiB, BootTimeout: 5 * time.Minute,
	}
}

// errSkip marks a probe that has nothing to measure here; its status is
// "skipped", not "failed".
var errSkip = errors.New("nothing to measure")

// ProbeError lists the probes that failed; the report holds the details.
type ProbeError struct {
	Failed []ProbeStatus
}

func (e *ProbeError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, p := range e.Failed {
		parts[i] = p.Name + ": " + p.Error
	}
	return "hwbench: " + strings.Join(parts, "; ")
}

// ValidateOptions checks o as Run would: known probes, sizes, counts and
// rank settings. Its errors are the caller's input.
func ValidateOptions(o Options) error { return o.validate() }

func (o *Options) validate() error {
	known := map[string]bool{}
	for _, p := range Probes {
		known[p] = true
	}
	if len(o.Probes) == 0 {
		return fmt.Errorf("hwbench: no probe selected (known: %s)", strings.Join(Probes, ", "))
	}
	seen := map[string]bool{}
	for _, p := range o.Probes {
		if !known[p] {
			return fmt.Errorf("hwbench: unknown probe %q (known: %s)", p, strings.Join(Probes, ", "))
		}
		if seen[p] {
			return fmt.Errorf("hwbench: probe %q given twice", p)
		}
		seen[p] = true
	}
	switch {
	case o.MinBytes < 1:
		return fmt.Errorf("hwbench: minbytes must be at least 1, got %d", o.MinBytes)
	case o.MaxBytes < o.MinBytes:
		return fmt.Errorf("hwbench: maxbytes %d is below minbytes %d", o.MaxBytes, o.MinBytes)
	case o.StepFactor < 2:
		return fmt.Errorf("hwbench: stepfactor must be at least 2, got %d", o.StepFactor)
	case o.Iters < 1:
		return fmt.Errorf("hwbench: iters must be at least 1, got %d", o.Iters)
	case o.Check < 0:
		return fmt.Errorf("hwbench: check must be 0 or 1, got %d", o.Check)
	case o.Warmup < 0:
		return fmt.Errorf("hwbench: warmup must not be negative, got %d", o.Warmup)
	case o.CopyBytes < 4:
		return fmt.Errorf("hwbench: copy size must be at least 4 bytes, got %d", o.CopyBytes)
	case o.NRanks < 0 || (o.NRanks > 0 && (o.Rank < 0 || o.Rank >= o.NRanks)):
		return fmt.Errorf("hwbench: rank %d is not in 0..%d", o.Rank, o.NRanks-1)
	case o.NRanks > 1 && o.Coordinator == "":
		return fmt.Errorf("hwbench: %d ranks need --coordinator HOST:PORT (rank 0's address)", o.NRanks)
	}
	return nil
}

// runner is one run's state.
type runner struct {
	b       Backend
	o       Options
	rep     *Report
	machine Machine
	now     func() time.Time
	out     string // this rank's report path ("" none)

	boot                                *Bootstrap
	rank, nranks, localRank, localRanks int
	names                               map[string]string // bus id -> GPU name (NVML)
}

// Run runs the probes on b and returns the report. The report is written
// to o.Out after every probe (and every finished unit of the long ones).
// Probes whose library is missing are skipped; the error lists the probes
// that failed (a *ProbeError), the report is complete either way. With
// several ranks, every rank joins the nccl probe; the other probes run on
// the first rank of each host, rank 0 writes o.Out and another host's
// first rank writes o.Out with ".rank<N>" before the extension.
func Run(ctx context.Context, b Backend, o Options) (*Report, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BootTimeout <= 0 {
		o.BootTimeout = 5 * time.Minute
	}
	if o.Pid == 0 {
		o.Pid = os.Getpid()
	}
	if o.Tool == "" {
		o.Tool = "collsim hwbench"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	r := &runner{b: b, o: o, now: o.Now, rank: 0, nranks: 1, localRanks: 1}
	if o.NRanks > 1 {
		r.rank, r.nranks = o.Rank, o.NRanks
	}
	host, err := b.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hwbench: hostname: %w", err)
	}
	r.machine = Machine{Hostname: host, Kernel: kernelRelease(b.Files()), CPU: cpuVendor(b.Files()), Versions: b.Versions(), Rank: r.rank, NRanks: r.nranks}
	if r.nranks > 1 {
		bctx, cancel := context.WithTimeout(ctx, o.BootTimeout)
		r.progressf("bootstrap: rank %d of %d, coordinator %s", r.rank, r.nranks, o.Coordinator)
		r.boot, err = Connect(bctx, o.Coordinator, r.rank, r.nranks)
		cancel()
		if err != nil {
			return nil, err
		}
		defer r.boot.Close()
		hosts, err := r.boot.AllGather(ctx, []byte(host))
		if err != nil {
			return nil, err
		}
		for i, h := range hosts {
			if string(h) == host {
				if i < r.rank {
					r.localRank++
				}
			}
		}
		r.localRanks = 0
		for _, h := range hosts {
			if string(h) == host {
				r.localRanks++
			}
		}
	}
	switch {
	case r.rank == 0:
		r.out = o.Out
	case r.localRank == 0 && o.Out != "":
		ext := filepath.Ext(o.Out)
		r.out = fmt.Sprintf("%s.rank%d%s", strings.TrimSuffix(o.Out, ext), r.rank, ext)
	}
	r.rep = &Report{
		Written: r.out, Format: Format, Tool: o.Tool, Backend: o.BackendName, Machine: r.machine, Started: r.now(),
		Options: RunSettings{Probes: o.Probes, MinBytes: int64(o.MinBytes), MaxBytes: int64(o.MaxBytes), StepFactor: o.StepFactor, Iters: o.Iters, Warmup: o.Warmup, CopyBytes: int64(o.CopyBytes), Check: o.Check},
	}
	for _, p := range o.Probes {
		r.rep.Probes = append(r.rep.Probes, ProbeStatus{Name: p, Status: StatusPending})
	}
	if err := r.flush(); err != nil {
		return nil, err
	}
	var failed []ProbeStatus
	for i, p := range o.Probes {
		st := &r.rep.Probes[i]
		if ctx.Err() != nil {
			st.Status, st.Error = StatusSkipped, "interrupted before it started"
			continue
		}
		if p != "nccl" && p != "rdma" && r.localRank != 0 {
			st.Status, st.Error = StatusSkipped, fmt.Sprintf("runs on the first rank of %s", host)
			continue
		}
		st.Status = StatusRunning
		if err := r.flush(); err != nil {
			return r.rep, err
		}
		t0 := r.now()
		r.progressf("%s: start", p)
		perr := r.runProbe(ctx, p)
		st.Seconds = roundSecs(r.now().Sub(t0))
		switch {
		case perr == nil:
			st.Status = StatusOK
		case unavailable(perr) || errors.Is(perr, errSkip):
			st.Status, st.Error = StatusSkipped, oneLine(perr.Error())
		default:
			st.Status, st.Error = StatusFailed, oneLine(perr.Error())
			failed = append(failed, *st)
			if p == "nccl" && r.boot != nil {
				// The other ranks may be waiting for this one; let them fail too.
				r.boot.Close()
			}
		}
		r.progressf("%s: %s %s", p, st.Status, st.Error)
		if p == "nccl" && r.rank == 0 && r.rep.NCCL != nil && len(r.rep.NCCL.Sweeps) > 0 && o.NCCLText != "" {
			if err := r.writeNCCLText(); err != nil {
				return r.rep, err
			}
		}
		if err := r.flush(); err != nil {
			return r.rep, err
		}
	}
	if len(failed) > 0 {
		return r.rep, &ProbeError{Failed: failed}
	}
	if err := ctx.Err(); err != nil {
		return r.rep, fmt.Errorf("hwbench: interrupted: %w", err)
	}
	return r.rep, nil
}

func (r *runner) runProbe(ctx context.Context, p string) (err error) {
	switch p {
	case "topo":
		return r.probeTopo(ctx)
	case "copy":
		return r.probeCopy(ctx)
	case "p2p":
		return r.probeP2P(ctx)
	case "nvbw":
		return r.probeNVBW(ctx)
	case "nccl":
		return r.probeNCCL(ctx)
	case "gdr":
		return r.probeGDR(ctx)
	case "rdma":
		return r.probeRDMA(ctx)
	}
	return fmt.Errorf("unknown probe %q", p)
}

func (r *runner) probeTopo(ctx context.Context) error {
	inv, err := r.b.Inventory()
	if err != nil {
		return err
	}
	in := topoInput{host: r.machine.Hostname, inv: inv, fsys: r.b.Files()}
	if rt, err := r.b.Runtime(); err == nil {
		in.cuda, _ = rt.Devices()
	}
	if rd, err := r.b.RDMA(); err == nil {
		in.verbs, _ = rd.HCAs()
	}
	t := buildTopo(in)
	t.Stamp = r.stamp()
	r.rep.Topo = t
	r.progressf("topo: %d x %s, %d RDMA devices, node spec %s", len(t.GPUs), t.GPUModel, len(t.NICs), okText(t.NodeError))
	return nil
}

// gpus returns the CUDA runtime and the GPUs it sees.
func (r *runner) gpus() (Runtime, []DeviceInfo, error) {
	rt, err := r.b.Runtime()
	if err != nil {
		return nil, nil, err
	}
	devs, err := rt.Devices()
	if err != nil {
		return nil, nil, err
	}
	return rt, devs, nil
}

func okText(e string) string {
	if e == "" {
		return "valid"
	}
	return "invalid (" + e + ")"
}

// gpuName returns NVML's name for the GPU at bus, "" when unknown.
func (r *runner) gpuName(bus string) string {
	if r.names == nil {
		r.names = map[string]string{}
		if inv, err := r.b.Inventory(); err == nil {
			for _, g := range inv.GPUs {
				r.names[g.BusID] = g.Name
			}
		}
	}
	return r.names[bus]
}

func (r *runner) writeNCCLText() error {
	var sb strings.Builder
	if err := WriteNCCLTests(&sb, r.rep.NCCL, r.o.Tool); err != nil {
		return err
	}
	return WriteFileAtomic(r.o.NCCLText, []byte(sb.String()))
}

// stamp is the machine and the time now, for a result.
func (r *runner) stamp() Stamp { return Stamp{Machine: r.machine, Time: r.now()} }

// flush rewrites this rank's report file.
func (r *runner) flush() error {
	if r.out == "" {
		return nil
	}
	r.rep.Updated = r.now()
	b, err := r.rep.Encode()
	if err != nil {
		return err
	}
	return WriteFileAtomic(r.out, b)
}

func (r *runner) progressf(format string, a ...any) {
	if r.o.Progress == nil {
		return
	}
	prefix := "hwbench: "
	if r.nranks > 1 {
		prefix = fmt.Sprintf("hwbench[%d]: ", r.rank)
	}
	fmt.Fprintf(r.o.Progress, "%s%s\n", prefix, strings.TrimSpace(fmt.Sprintf(format, a...)))
}

func roundSecs(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// oneLine keeps an error to one line.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.TrimSpace(s)
}

// joinShort joins failure texts, at most five, with a count of the rest.
func joinShort(list []string) string {
	if len(list) > 5 {
		return fmt.Sprintf("%s; and %d more", strings.Join(list[:5], "; "), len(list)-5)
	}
	return strings.Join(list, "; ")
}
