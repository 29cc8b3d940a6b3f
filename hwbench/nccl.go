package hwbench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/collsim/collsim/model"
)

// NCCLCollectives are the collectives the nccl probe sweeps, in order:
// every nccl-tests binary (all_reduce, all_gather, reduce_scatter,
// broadcast, reduce, alltoall, sendrecv).
var NCCLCollectives = []model.Collective{model.AllReduce, model.AllGather, model.ReduceScatter, model.Broadcast, model.Reduce, model.AlltoAll, model.SendRecv}

// ncclElemSize is the size of the float elements every sweep uses.
const ncclElemSize = 4

// NCCLResult is the nccl probe: nccl-tests-equivalent sweeps of every
// collective nccl-tests has (NCCLCollectives) over every GPU of the run
// (float32, sum, root 0). With Check (nccl-tests -c 1, its default) every
// size is also run once on known data and the results compared on the host:
// the #wrong columns.
// Method (nccl-facts §1.2): for each collective, Warmup untimed launches of
// every size first; then per size the out-of-place run, then the in-place
// run, each Iters launches between two CUDA events on every rank's stream.
// A rank's time is its event time / Iters; a process's time is the maximum
// over its ranks (nccl-tests uses wall time over all its GPUs); the
// reported time is the mean over processes (nccl-tests -a 1). algbw =
// size/time, busbw = algbw x the nccl-tests factor (2(n-1)/n for AllReduce,
// (n-1)/n for AllGather, ReduceScatter and AlltoAll, 1 for Broadcast,
// Reduce and SendRecv), in GB/s of 1e9 bytes.
type NCCLResult struct {
	Stamp
	// Mode is "single-process" (ncclCommInitAll over the local GPUs) or
	// "multi-process" (ncclCommInitRank, one GPU per process).
	Mode       string       `json:"mode"`
	Ranks      int          `json:"ranks"`
	Hosts      []string     `json:"hosts"`
	Devices    []NCCLDevice `json:"devices"`
	MinBytes   int64        `json:"min_bytes"`
	MaxBytes   int64        `json:"max_bytes"`
	StepFactor int          `json:"step_factor"`
	Iters      int          `json:"iters"`
	Warmup     int          `json:"warmup_iters"`
	// DType is nccl-tests' name of the element type ("float").
	DType string `json:"dtype"`
	// Timing names the method ("cuda-events").
	Timing string `json:"timing"`
	// Check is nccl-tests' -c: 1 when every size was checked on data.
	Check  int      `json:"check"`
	Notes  []string `json:"notes,omitempty"`
	Sweeps []Sweep  `json:"sweeps"`
	// DebugLog is what NCCL printed with NCCL_DEBUG=INFO while the probe
	// ran (every process's lines, in rank order): the transports, GDRDMA,
	// channel, ring and tree lines validate reads. Transports are the
	// distinct "via ..." transports of its channel lines; NVLS is
	// "available" or "not available" as NCCL's NVLS init said ("" when
	// the log does not say).
	DebugLog   []string `json:"debug_log,omitempty"`
	Transports []string `json:"transports,omitempty"`
	NVLS       string   `json:"nvls,omitempty"`
}

// NCCLDevice is one rank's GPU, as nccl-tests lists it.
type NCCLDevice struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Pid    int    `json:"pid"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// Choice says how a rank of a multi-process run chose its GPU ("the
	// only visible GPU", "SLURM_LOCALID=3 of 8 visible GPUs", ...).
	Choice string `json:"choice,omitempty"`
}

// Sweep is one collective's table.
type Sweep struct {
	// Collective is collsim's name ("allreduce"); Test is the nccl-tests
	// binary ("all_reduce_perf").
	Collective string `json:"collective"`
	Test       string `json:"test"`
	// Redop is "sum" or "none" (AllGather).
	Redop string `json:"redop"`
	// Root is the root rank of Broadcast and Reduce (0), -1 otherwise,
	// as nccl-tests prints it.
	Root int        `json:"root"`
	Rows []SweepRow `json:"rows"`
	// AvgBusBW is nccl-tests' "# Avg bus bandwidth": the mean busbw of
	// every out-of-place and in-place result.
	AvgBusBW Num `json:"avg_busbw_gbps"`
	// Complete is false when the sweep stopped early.
	Complete bool `json:"complete"`
	// Wrong is the sum of every row's #wrong ("Out of bounds values"),
	// -1 when nothing was checked.
	Wrong int64 `json:"wrong"`
}

// SweepRow is one size.
type SweepRow struct {
	// Size is the bytes nccl-tests prints (the total buffer for AllGather
	// and ReduceScatter); Count is the element count passed to NCCL (per
	// rank for AllGather and ReduceScatter).
	Size  int64  `json:"size_bytes"`
	Count int64  `json:"count"`
	OOP   Timing `json:"out_of_place"`
	IP    Timing `json:"in_place"`
}

// Timing is one timed group of a row.
type Timing struct {
	TimeUs Num `json:"time_us"`
	AlgBW  Num `json:"algbw_gbps"`
	BusBW  Num `json:"busbw_gbps"`
	// Wrong is nccl-tests' #wrong: elements that differ from the
	// expected result, summed over ranks; nil when not checked.
	Wrong *int64 `json:"wrong,omitempty"`
}

// SweepSizes lists the sizes nccl-tests visits from min to max bytes,
// multiplying by factor (its -b/-e/-f loop). It returns nil for min < 1,
// max < min or factor < 2.
func SweepSizes(min, max model.Bytes, factor int) []model.Bytes {
	if min < 1 || max < min || factor < 2 {
		return nil
	}
	var out []model.Bytes
	for s := min; s <= max; s *= model.Bytes(factor) {
		out = append(out, s)
		if s > max/model.Bytes(factor) {
			break
		}
	}
	return out
}

// newTiming computes algbw and busbw for size bytes in seconds on n ranks.
func newTiming(c model.Collective, size int64, secs float64, n int) Timing {
	if size == 0 && secs >= 0 {
		// A zero-byte row (AllGather of fewer bytes than ranks x 16):
		// NCCL returns at once, nccl-tests prints the time and 0 GB/s.
		return Timing{TimeUs: Num(secs * 1e6), AlgBW: 0, BusBW: 0}
	}
	if secs <= 0 {
		return Timing{TimeUs: nan(), AlgBW: nan(), BusBW: nan()}
	}
	alg := float64(size) / secs / 1e9
	return Timing{TimeUs: Num(secs * 1e6), AlgBW: Num(alg), BusBW: Num(alg * c.BusBWFactor(n))}
}

// ncclRank is one rank this process drives.
type ncclRank struct {
	rank, dev  int
	choice     string // how the GPU was chosen (multi-process runs)
	comm       Comm
	s          Stream
	send, recv Buffer
}

func (r *runner) probeNCCL(ctx context.Context) (err error) {
	rt, err := r.b.Runtime()
	if err != nil {
		return err
	}
	coll, err := r.b.Collectives()
	if err != nil {
		return err
	}
	devs, err := rt.Devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return fmt.Errorf("no GPU")
	}
	res := &NCCLResult{
		Mode: "single-process", MinBytes: int64(r.o.MinBytes), MaxBytes: int64(r.o.MaxBytes), StepFactor: r.o.StepFactor,
		Iters: r.o.Iters, Warmup: r.o.Warmup, DType: "float", Timing: "cuda-events", Check: r.o.Check,
	}
	var local []*ncclRank
	nranks := len(devs)
	if r.nranks > 1 {
		res.Mode = "multi-process"
		nranks = r.nranks
		d, how, err := pickGPU(devs, r.localRank, r.o.Getenv)
		if err != nil {
			return fmt.Errorf("rank %d on %s: %w", r.rank, r.machine.Hostname, err)
		}
		local = []*ncclRank{{rank: r.rank, dev: d.Index, choice: how}}
	} else {
		for i, d := range devs {
			local = append(local, &ncclRank{rank: i, dev: d.Index})
		}
	}
	res.Ranks = nranks

	// Who is where: every rank's GPU, gathered to every rank.
	mine := make([]NCCLDevice, len(local))
	for i, l := range local {
		mine[i] = NCCLDevice{Rank: l.rank, Host: r.machine.Hostname, Pid: r.o.Pid, Device: l.dev, BusID: busOf(devs, l.dev), Name: r.gpuName(busOf(devs, l.dev)), Choice: l.choice}
	}
	if res.Devices, err = r.gatherDevices(ctx, mine); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range res.Devices {
		if !seen[d.Host] {
			seen[d.Host] = true
			res.Hosts = append(res.Hosts, d.Host)
		}
	}

	// Buffers: send and receive of the largest size on every local rank,
	// after shrinking the sweep to fit, as nccl-tests does.
	maxBytes := r.o.MaxBytes
	for _, l := range local {
		for _, d := range devs {
			if d.Index == l.dev && d.FreeBytes > 0 && uint64(2*maxBytes) > d.FreeBytes*9/10 {
				lim := model.Bytes(d.FreeBytes * 9 / 10 / 2)
				for maxBytes > lim && maxBytes > r.o.MinBytes {
					maxBytes /= model.Bytes(r.o.StepFactor)
				}
			}
		}
	}
	if r.nranks > 1 {
		if maxBytes, err = r.agreeMin(ctx, maxBytes); err != nil {
			return err
		}
	}
	if maxBytes != r.o.MaxBytes {
		res.Notes = append(res.Notes, fmt.Sprintf("reduced maxBytes from %d to %d to fit GPU memory", r.o.MaxBytes, maxBytes))
		r.progressf("nccl: reducing maxBytes to %s due to memory limitation", model.FormatBytes(maxBytes))
	}
	sizes := SweepSizes(r.o.MinBytes, maxBytes, r.o.StepFactor)
	bufBytes := int64(maxBytes)
	a := &allocator{rt: rt}
	defer a.freeAll()
	for _, l := range local {
		if l.send, err = a.alloc(DeviceMem, l.dev, bufBytes); err != nil {
			return err
		}
		if l.recv, err = a.alloc(DeviceMem, l.dev, bufBytes); err != nil {
			return err
		}
		if l.s, err = rt.NewStream(l.dev); err != nil {
			return err
		}
		defer l.s.Close()
	}

	// NCCL's own account of the communicator, from NCCL_DEBUG=INFO.
	dbg, note, err := r.startDebugCapture(coll)
	if err != nil {
		return err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	defer func() {
		if derr := r.finishDebugCapture(ctx, res, dbg); derr != nil && err == nil {
			err = derr
		}
	}()

	// Communicators.
	r.progressf("nccl: creating a %d-rank communicator (%s)", nranks, res.Mode)
	if r.nranks > 1 {
		var id []byte
		if r.rank == 0 {
			if id, err = coll.UniqueID(); err != nil {
				return err
			}
		}
		if id, err = r.broadcast(ctx, id); err != nil {
			return err
		}
		c, err := coll.InitRank(id, nranks, r.rank, local[0].dev)
		if err != nil {
			return err
		}
		local[0].comm = c
	} else {
		ids := make([]int, len(local))
		for i, l := range local {
			ids[i] = l.dev
		}
		comms, err := coll.InitAll(ids)
		if err != nil {
			return err
		}
		for i, c := range comms {
			local[i].comm = c
		}
	}
	defer func() {
		for _, l := range local {
			if l.comm == nil {
				continue
			}
			if err != nil {
				// A failed collective may leave work that never ends;
				// ncclCommDestroy would wait for it.
				l.comm.Abort()
				res.Notes = append(res.Notes, fmt.Sprintf("rank %d: communicator aborted after: %s", l.rank, oneLine(err.Error())))
			} else {
				l.comm.Close()
			}
		}
	}()
	res.Stamp = r.stamp() // a probe that stops early still says where and when
	r.rep.NCCL = res
	var chk *checker
	if r.o.Check > 0 {
		if chk, err = newChecker(rt, a, bufBytes); err != nil {
			return err
		}
	}
	var wrongTotal int64

	ops := r.o.Collectives
	if len(ops) == 0 {
		ops = NCCLCollectives
	}
	for _, op := range ops {
		sw := Sweep{Collective: op.String(), Test: op.TestName() + "_perf", Redop: "sum", Root: -1, Wrong: -1}
		if !op.HasRedop() {
			sw.Redop = "none"
		}
		if op.HasRoot() {
			sw.Root = 0
		}
		if chk != nil {
			sw.Wrong = 0
		}
		res.Sweeps = append(res.Sweeps, sw)
		cur := &res.Sweeps[len(res.Sweeps)-1]
		// Warm-up over every size, untimed.
		for _, size := range sizes {
			_, count := op.TestSize(size, ncclElemSize, nranks)
			if err := r.launch(coll, local, op, count, nranks, false, r.o.Warmup); err != nil {
				return fmt.Errorf("%s warm-up: %w", op, err)
			}
		}
		for _, l := range local {
			if err := l.s.Sync(); err != nil {
				return err
			}
		}
		var sum float64
		var cnt int
		for i, size := range sizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			printed, count := op.TestSize(size, ncclElemSize, nranks)
			row := SweepRow{Size: int64(printed), Count: count}
			for _, inPlace := range []bool{false, true} {
				secs, err := r.timeColl(ctx, coll, local, op, count, nranks, inPlace)
				if err != nil {
					return fmt.Errorf("%s %d bytes: %w", op, printed, err)
				}
				t := newTiming(op, int64(printed), secs, nranks)
				if chk != nil {
					w, err := r.checkColl(ctx, chk, coll, local, op, count, nranks, inPlace)
					if err != nil {
						return fmt.Errorf("%s %d bytes check: %w", op, printed, err)
					}
					t.Wrong = &w
					cur.Wrong += w
					wrongTotal += w
				}
				if inPlace {
					row.IP = t
				} else {
					row.OOP = t
				}
				sum += float64(t.BusBW)
				cnt++
			}
			cur.Rows = append(cur.Rows, row)
			cur.AvgBusBW = Num(sum / float64(cnt))
			res.Stamp = r.stamp()
			r.progressf("nccl %s %d ranks: %12d B  %9.2f us  busbw %7.2f GB/s  (%d/%d)", op, nranks, printed, row.OOP.TimeUs, row.OOP.BusBW, i+1, len(sizes))
			if err := r.flush(); err != nil {
				return err
			}
		}
		cur.Complete = true
		if err := r.flush(); err != nil {
			return err
		}
	}
	if wrongTotal > 0 {
		return fmt.Errorf("%d wrong values in the data check (nccl-tests -c 1): the collectives returned wrong results", wrongTotal)
	}
	return nil
}

func busOf(devs []DeviceInfo, dev int) string {
	for _, d := range devs {
		if d.Index == dev {
			return d.BusID
		}
	}
	return ""
}

// buffers returns the send and receive buffers of one launch, as nccl-tests
// places them: in place, AllGather sends from the rank's slot of the
// receive buffer and ReduceScatter receives into it.
func buffers(l *ncclRank, op model.Collective, count int64, nranks int, inPlace bool) (send, recv Buffer) {
	per := count * ncclElemSize
	switch op {
	case model.AllGather:
		recv = l.recv.Slice(0, per*int64(nranks))
		if inPlace {
			return recv.Slice(per*int64(l.rank), per), recv
		}
		return l.send.Slice(0, per), recv
	case model.ReduceScatter:
		if inPlace {
			send = l.recv.Slice(0, per*int64(nranks))
			return send, send.Slice(per*int64(l.rank), per)
		}
		return l.send.Slice(0, per*int64(nranks)), l.recv.Slice(0, per)
	case model.AlltoAll:
		recv = l.recv.Slice(0, per*int64(nranks))
		if inPlace {
			return recv, recv
		}
		return l.send.Slice(0, per*int64(nranks)), recv
	}
	recv = l.recv.Slice(0, per)
	if inPlace {
		return recv, recv
	}
	return l.send.Slice(0, per), recv
}

// launch issues iters launches of op on every local rank, each iteration
// one NCCL group.
func (r *runner) launch(coll Collectives, local []*ncclRank, op model.Collective, count int64, nranks int, inPlace bool, iters int) error {
	for it := 0; it < iters; it++ {
		err := coll.Group(func() error {
			for _, l := range local {
				send, recv := buffers(l, op, count, nranks, inPlace)
				if err := l.comm.Launch(op, send, recv, count, l.s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// timeColl times Iters launches with CUDA events on every local rank and
// returns seconds per launch: the maximum over this process's ranks, then
// the mean over processes.
func (r *runner) timeColl(ctx context.Context, coll Collectives, local []*ncclRank, op model.Collective, count int64, nranks int, inPlace bool) (float64, error) {
	if r.boot != nil {
		// nccl-tests' Barrier before each timed loop: the processes start
		// their events together, so no rank's window holds the time
		// another spent before it (rank 0 writing and syncing the report
		// after every size), which its first collective would wait out.
		if _, err := r.boot.AllGather(ctx, nil); err != nil {
			return 0, fmt.Errorf("barrier before timing: %w", err)
		}
	}
	starts := make([]Event, len(local))
	for i, l := range local {
		e, err := l.s.Record()
		if err != nil {
			return 0, err
		}
		defer e.Close()
		starts[i] = e
	}
	if err := r.launch(coll, local, op, count, nranks, inPlace, r.o.Iters); err != nil {
		return 0, err
	}
	ends := make([]Event, len(local))
	for i, l := range local {
		e, err := l.s.Record()
		if err != nil {
			return 0, err
		}
		defer e.Close()
		ends[i] = e
	}
	var worst time.Duration
	for i, l := range local {
		if err := l.s.Sync(); err != nil {
			return 0, err
		}
		d, err := ends[i].Since(starts[i])
		if err != nil {
			return 0, err
		}
		worst = max(worst, d)
	}
	secs := worst.Seconds() / float64(r.o.Iters)
	if r.nranks > 1 {
		return r.meanOverRanks(ctx, secs)
	}
	return secs, nil
}

// gatherDevices shares every rank's device list with every rank.
func (r *runner) gatherDevices(ctx context.Context, mine []NCCLDevice) ([]NCCLDevice, error) {
	if r.boot == nil {
		return mine, nil
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	all, err := r.boot.AllGather(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []NCCLDevice
	for rank, raw := range all {
		var ds []NCCLDevice
		if err := json.Unmarshal(raw, &ds); err != nil {
			return nil, fmt.Errorf("rank %d sent a bad device list: %w", rank, err)
		}
		out = append(out, ds...)
	}
	return out, nil
}

// broadcast sends rank 0's data to every rank.
func (r *runner) broadcast(ctx context.Context, data []byte) ([]byte, error) {
	if r.boot == nil {
		return data, nil
	}
	all, err := r.boot.AllGather(ctx, data)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// meanOverRanks averages a per-process time over every process.
func (r *runner) meanOverRanks(ctx context.Context, secs float64) (float64, error) {
	all, err := gatherNumbers[float64](ctx, r, fmt.Sprintf("%.17g", secs), "time")
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, v := range all {
		sum += v
	}
	return sum / float64(len(all)), nil
}

// agreeMin makes every rank use the smallest of the ranks' values.
func (r *runner) agreeMin(ctx context.Context, v model.Bytes) (model.Bytes, error) {
	all, err := gatherNumbers[int64](ctx, r, fmt.Sprint(int64(v)), "size")
	if err != nil {
		return 0, err
	}
	for _, x := range all {
		v = min(v, model.Bytes(x))
	}
	return v, nil
}

// gatherNumbers sends text, a number, to every rank and returns every
// rank's number in rank order; what names it in the error for a rank that
// sent something else.
func gatherNumbers[T int64 | float64](ctx context.Context, r *runner, text, what string) ([]T, error) {
	all, err := r.boot.AllGather(ctx, []byte(text))
	if err != nil {
		return nil, err
	}
	out := make([]T, len(all))
	for rank, b := range all {
		if _, err := fmt.Sscan(string(b), &out[rank]); err != nil {
			return nil, fmt.Errorf("rank %d sent a bad %s %q", rank, what, b)
		}
	}
	return out, nil
}
