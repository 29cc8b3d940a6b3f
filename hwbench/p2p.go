package hwbench

import (
	"context"
	"fmt"
	"math"
	"time"
)

// P2PResult is the p2p probe, after CUDA's p2pBandwidthLatencyTest: GPU x
// GPU matrices of unidirectional and bidirectional copy bandwidth and of
// copy latency, first with peer access off (copies staged through host
// memory), then on for every pair that supports it. Rows are the source
// GPU (CUDA ordinals), columns the destination; the diagonal is a copy
// within one GPU.
type P2PResult struct {
	Stamp
	GPUs int `json:"gpus"`
	// Bytes per copy and Iters timed copies per cell (Warmup untimed before).
	Bytes  int64 `json:"bytes"`
	Iters  int   `json:"iters"`
	Warmup int   `json:"warmup_iters"`
	// LatencyBytes per copy and LatencyIters copies per latency cell.
	LatencyBytes int64 `json:"latency_bytes"`
	LatencyIters int   `json:"latency_iters"`
	// LatencyMethod is "spin-kernel" (p2pBandwidthLatencyTest's: a
	// kernel holds the stream while the copies are queued, CUDA events
	// time them back to back) or "back-to-back" (no spin kernel could be
	// loaded: each figure then includes the host's issue cost per copy);
	// LatencyNote says why the spin kernel was not used.
	LatencyMethod string `json:"latency_method,omitempty"`
	LatencyNote   string `json:"latency_note,omitempty"`
	// Access[i][j] is cudaDeviceCanAccessPeer(i, j).
	Access   [][]bool       `json:"access"`
	Matrices []MatrixResult `json:"matrices"`
}

// MatrixResult is one square matrix.
type MatrixResult struct {
	// Title is p2pBandwidthLatencyTest's heading for the matrix.
	Title string `json:"title"`
	// Metric is "bandwidth-uni", "bandwidth-bidi" or "latency".
	Metric string `json:"metric"`
	// Unit is "GB/s" or "us".
	Unit string `json:"unit"`
	// P2P is whether peer access was on.
	P2P bool `json:"p2p"`
	// Values[i][j]; null where the measurement failed.
	Values [][]Num `json:"values"`
}

// p2pLatencyBytes is the size of one latency copy (one int, as the CUDA
// sample copies).
const p2pLatencyBytes = 4

// p2pLatencyIters is how many latency copies are averaged per cell.
const p2pLatencyIters = 100

func squareNaN(n int) [][]Num {
	m := make([][]Num, n)
	for i := range m {
		m[i] = make([]Num, n)
		for j := range m[i] {
			m[i][j] = nan()
		}
	}
	return m
}

func nan() Num { return Num(math.NaN()) }

type p2pDev struct {
	src, dst Buffer
	s, s2    Stream
}

func (r *runner) probeP2P(ctx context.Context) error {
	rt, devs, err := r.gpus()
	if err != nil {
		return err
	}
	n := len(devs)
	size := int64(r.o.CopyBytes)
	res := &P2PResult{GPUs: n, Bytes: size, Iters: r.o.Iters, Warmup: r.o.Warmup, LatencyBytes: p2pLatencyBytes, LatencyIters: p2pLatencyIters}
	res.Access = make([][]bool, n)
	for i := range res.Access {
		res.Access[i] = make([]bool, n)
		for j := range res.Access[i] {
			if i == j {
				continue
			}
			if res.Access[i][j], err = rt.CanAccessPeer(devs[i].Index, devs[j].Index); err != nil {
				return err
			}
		}
	}
	res.Stamp = r.stamp() // a probe that stops early still says where and when
	r.rep.P2P = res
	a := &allocator{rt: rt}
	defer a.freeAll()
	pd := make([]p2pDev, n)
	for i, d := range devs {
		if pd[i].src, err = a.alloc(DeviceMem, d.Index, size); err != nil {
			return err
		}
		if pd[i].dst, err = a.alloc(DeviceMem, d.Index, size); err != nil {
			return err
		}
		if pd[i].s, err = rt.NewStream(d.Index); err != nil {
			return err
		}
		defer pd[i].s.Close()
		if pd[i].s2, err = rt.NewStream(d.Index); err != nil {
			return err
		}
		defer pd[i].s2.Close()
	}
	setAll := func(on bool) error {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j && (res.Access[i][j] || !on) {
					if err := rt.SetPeerAccess(devs[i].Index, devs[j].Index, on); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	var failures []string
	for _, on := range []bool{false, true} {
		if err := setAll(on); err != nil {
			return err
		}
		state := "Disabled"
		if on {
			state = "Enabled"
		}
		uni := MatrixResult{Title: fmt.Sprintf("Unidirectional P2P=%s Bandwidth Matrix (GB/s)", state), Metric: "bandwidth-uni", Unit: "GB/s", P2P: on, Values: squareNaN(n)}
		bidi := MatrixResult{Title: fmt.Sprintf("Bidirectional P2P=%s Bandwidth Matrix (GB/s)", state), Metric: "bandwidth-bidi", Unit: "GB/s", P2P: on, Values: squareNaN(n)}
		lat := MatrixResult{Title: fmt.Sprintf("P2P=%s Latency Matrix (us)", state), Metric: "latency", Unit: "us", P2P: on, Values: squareNaN(n)}
		base := len(res.Matrices)
		res.Matrices = append(res.Matrices, uni, bidi, lat)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				u, b, l, err := r.p2pCell(rt, res, pd[i], pd[j], size)
				if err != nil {
					failures = append(failures, fmt.Sprintf("%d->%d P2P=%s: %v", i, j, state, err))
				}
				res.Matrices[base].Values[i][j] = u
				res.Matrices[base+1].Values[i][j] = b
				res.Matrices[base+2].Values[i][j] = l
			}
			res.Stamp = r.stamp()
			if err := r.flush(); err != nil {
				return err
			}
		}
		r.progressf("p2p P2P=%s: %d x %d matrices done", state, n, n)
	}
	if err := setAll(false); err != nil {
		return err
	}
	if len(failures) > 0 {
		return fmt.Errorf("%s", joinShort(failures))
	}
	return nil
}

// p2pCell measures one (source i, destination j) cell: unidirectional
// bandwidth (i's stream copies i to j), bidirectional bandwidth (i's
// stream copies i to j while j's second stream copies j to i, both started
// by one event) and latency (small copies one after another).
func (r *runner) p2pCell(rt Runtime, res *P2PResult, a, b p2pDev, size int64) (uni, bidi, lat Num, err error) {
	uni, bidi, lat = nan(), nan(), nan()
	el, err := timeCopies(a.s, b.dst, a.src, size, r.o.Warmup, r.o.Iters)
	if err != nil {
		return
	}
	// A copy within one GPU reads and writes that GPU's memory: the
	// diagonal counts both, as p2pBandwidthLatencyTest's does ("if (i ==
	// j) gb *= 2; // must count both the read and the write", cuda-samples
	// outputBandwidthMatrix), so the matrices compare cell for cell.
	both := 1.0
	if a.src.Device == b.src.Device {
		both = 2
	}
	uni = gbps(both*float64(size)*float64(r.o.Iters), el)

	el, err = timeBidi(a, b, size, r.o.Warmup, r.o.Iters)
	if err != nil {
		return
	}
	bidi = gbps(both*2*float64(size)*float64(r.o.Iters), el)

	el, err = r.timeLatency(rt, res, a.s, b.dst, a.src)
	if err != nil {
		return
	}
	lat = Num(el.Seconds() * 1e6 / p2pLatencyIters)
	return
}

// timeBidi times copies in both directions at once: a.s copies a to b while
// b.s2 copies b to a; b.s2 starts after a.s's start event and a.s's end
// event waits for b.s2's end, so the elapsed time spans both.
func timeBidi(a, b p2pDev, size int64, warmup, iters int) (time.Duration, error) {
	for i := 0; i < warmup; i++ {
		if err := a.s.Copy(b.dst, a.src, size); err != nil {
			return 0, err
		}
		if err := b.s2.Copy(a.dst, b.src, size); err != nil {
			return 0, err
		}
	}
	if err := b.s2.Sync(); err != nil {
		return 0, err
	}
	start, err := a.s.Record()
	if err != nil {
		return 0, err
	}
	defer start.Close()
	if err := b.s2.Wait(start); err != nil {
		return 0, err
	}
	for i := 0; i < iters; i++ {
		if err := a.s.Copy(b.dst, a.src, size); err != nil {
			return 0, err
		}
		if err := b.s2.Copy(a.dst, b.src, size); err != nil {
			return 0, err
		}
	}
	endB, err := b.s2.Record()
	if err != nil {
		return 0, err
	}
	defer endB.Close()
	if err := a.s.Wait(endB); err != nil {
		return 0, err
	}
	end, err := a.s.Record()
	if err != nil {
		return 0, err
	}
	defer end.Close()
	if err := a.s.Sync(); err != nil {
		return 0, err
	}
	return end.Since(start)
}

// timeLatency times p2pLatencyIters copies of p2pLatencyBytes from src to
// dst on s, after one untimed copy. With a spin kernel holding the stream
// while they are queued, the copies run back to back and the events time
// only them; without one (res.LatencyMethod says which), they run as the
// host issues them.
func (r *runner) timeLatency(rt Runtime, res *P2PResult, s Stream, dst, src Buffer) (time.Duration, error) {
	if err := s.Copy(dst, src, p2pLatencyBytes); err != nil {
		return 0, err
	}
	var release func() error
	if res.LatencyMethod != "back-to-back" {
		var err error
		if release, err = rt.Hold(s); err != nil {
			res.LatencyMethod, res.LatencyNote = "back-to-back", "no spin kernel: "+oneLine(err.Error())
			r.progressf("p2p: latency without a spin kernel (%v)", err)
			release = nil
		} else {
			res.LatencyMethod = "spin-kernel"
			once, done := release, false
			release = func() error {
				if done {
					return nil
				}
				done = true
				return once()
			}
		}
	}
	el, err := timeQueued(s, dst, src, release)
	if err != nil && release != nil {
		release() // never leave the stream held
	}
	return el, err
}

// timeQueued records an event, queues the latency copies and a second
// event, releases the stream (when held) and only then waits: waiting
// first would wait for the spin kernel.
func timeQueued(s Stream, dst, src Buffer, release func() error) (time.Duration, error) {
	return timeBetweenEvents(s, dst, src, p2pLatencyBytes, p2pLatencyIters, release)
}
