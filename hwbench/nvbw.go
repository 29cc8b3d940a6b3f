package hwbench

import (
	"context"
	"fmt"
	"time"
)

// NVBandwidthResult is the nvbw probe, after NVIDIA's nvbandwidth: copy
// engine (cudaMemcpyAsync) bandwidth host-to-device and device-to-host per
// GPU alone and with every GPU copying at once (GPUs behind one PCIe
// uplink share it, which the alone figures hide), and device-to-device
// read and write matrices over NVLink (peer access on). Each figure is
// Iters copies of Bytes after Warmup untimed ones, timed with CUDA events
// on the stream that issues them; the all-at-once tests hold every stream
// with the spin kernel until all copies are queued, so they start
// together (without a spin kernel they start as issued; Notes say so).
// Host memory is pinned on the GPU's NUMA node.
type NVBandwidthResult struct {
	Stamp
	Bytes  int64 `json:"bytes"`
	Iters  int   `json:"iters"`
	Warmup int   `json:"warmup_iters"`
	// GPUs are the CUDA ordinals of the columns (and rows of the device
	// matrices).
	GPUs  []int     `json:"gpus"`
	Tests []NVBTest `json:"tests"`
	Notes []string  `json:"notes,omitempty"`
}

// NVBTest is one nvbandwidth testcase.
type NVBTest struct {
	// Name is nvbandwidth's testcase name ("host_to_device_memcpy_ce").
	Name string `json:"name"`
	// Title is nvbandwidth's heading ("memcpy CE CPU(row) -> GPU(column)
	// bandwidth (GB/s)").
	Title string `json:"title"`
	// Values: one row (host tests) or a GPU x GPU matrix (device tests:
	// row the GPU whose stream issues the copy, column the peer); GB/s,
	// null where not measured (the diagonal).
	Values [][]Num `json:"values"`
	// Sum is the total of the values (nvbandwidth's SUM line).
	Sum Num `json:"sum_gbps"`
}

// SMCopyNote says why SM-issued copies are absent.
const SMCopyNote = "SM copies (nvbandwidth's *_memcpy_sm tests) are not measured: they need a copy kernel, which this build does not ship; every figure here is a copy-engine copy"

func (r *runner) probeNVBW(ctx context.Context) error {
	rt, devs, err := r.gpus()
	if err != nil {
		return err
	}
	n := int64(r.o.CopyBytes)
	res := &NVBandwidthResult{Bytes: n, Iters: r.o.Iters, Warmup: r.o.Warmup, Notes: []string{SMCopyNote}}
	for _, d := range devs {
		res.GPUs = append(res.GPUs, d.Index)
	}
	res.Stamp = r.stamp() // a probe that stops early still says where and when
	r.rep.NVBW = res
	a := &allocator{rt: rt}
	defer a.freeAll()
	type gpu struct {
		dev, dev2, host Buffer
		s               Stream
	}
	gs := make([]gpu, len(devs))
	for i, d := range devs {
		g := &gs[i]
		if g.dev, err = a.alloc(DeviceMem, d.Index, n); err != nil {
			return err
		}
		if g.dev2, err = a.alloc(DeviceMem, d.Index, n); err != nil {
			return err
		}
		if g.host, err = a.allocPinned(n, pciNUMA(r.b.Files(), d.BusID)); err != nil {
			return err
		}
		if g.s, err = rt.NewStream(d.Index); err != nil {
			return err
		}
		defer g.s.Close()
	}
	row := func() []Num {
		v := make([]Num, len(devs))
		for i := range v {
			v[i] = nan()
		}
		return v
	}
	add := func(t NVBTest) error {
		var sum float64
		for _, vs := range t.Values {
			for _, v := range vs {
				if v == v { // not NaN
					sum += float64(v)
				}
			}
		}
		t.Sum = Num(sum)
		res.Tests = append(res.Tests, t)
		res.Stamp = r.stamp()
		r.progressf("nvbw %s: sum %.1f GB/s", t.Name, sum)
		return r.flush()
	}
	bw := func(d time.Duration) Num { return gbps(float64(n)*float64(r.o.Iters), d) }

	// Host to device and back, each GPU alone.
	for _, dir := range []struct {
		name, title string
		h2d         bool
	}{{"host_to_device_memcpy_ce", "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", true}, {"device_to_host_memcpy_ce", "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", false}} {
		v := row()
		for i, g := range gs {
			if err := ctx.Err(); err != nil {
				return err
			}
			dst, src := g.dev, g.host
			if !dir.h2d {
				dst, src = g.host, g.dev
			}
			el, err := timeCopies(g.s, dst, src, n, r.o.Warmup, r.o.Iters)
			if err != nil {
				return fmt.Errorf("%s GPU %d: %w", dir.name, devs[i].Index, err)
			}
			v[i] = bw(el)
		}
		if err := add(NVBTest{Name: dir.name, Title: dir.title, Values: [][]Num{v}}); err != nil {
			return err
		}
	}
	// Every GPU at once.
	for _, dir := range []struct {
		name, title string
		h2d         bool
	}{{"host_to_all_memcpy_ce", "memcpy CE CPU(row) -> GPU(column), all GPUs at once (GB/s)", true}, {"all_to_host_memcpy_ce", "memcpy CE CPU(row) <- GPU(column), all GPUs at once (GB/s)", false}} {
		v, note, err := r.allAtOnce(rt, len(gs), func(i int) (Stream, Buffer, Buffer) {
			if dir.h2d {
				return gs[i].s, gs[i].dev, gs[i].host
			}
			return gs[i].s, gs[i].host, gs[i].dev
		}, n)
		if err != nil {
			return fmt.Errorf("%s: %w", dir.name, err)
		}
		if note != "" && len(res.Notes) < 3 {
			res.Notes = append(res.Notes, note)
		}
		for i := range v {
			v[i] = bw(time.Duration(v[i]))
		}
		if err := add(NVBTest{Name: dir.name, Title: dir.title, Values: [][]Num{v}}); err != nil {
			return err
		}
	}
	// Device to device over NVLink (peer access on where possible): read
	// (the destination GPU's stream pulls from the peer) and write (the
	// source GPU's stream pushes to it).
	if len(gs) > 1 {
		for i := range devs {
			for j := range devs {
				if i == j {
					continue
				}
				if ok, _ := rt.CanAccessPeer(devs[i].Index, devs[j].Index); ok {
					if err := rt.SetPeerAccess(devs[i].Index, devs[j].Index, true); err != nil {
						return err
					}
					defer rt.SetPeerAccess(devs[i].Index, devs[j].Index, false)
				}
			}
		}
		for _, t := range []struct {
			name, title string
			read        bool
		}{{"device_to_device_memcpy_read_ce", "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)", true}, {"device_to_device_memcpy_write_ce", "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)", false}} {
			m := make([][]Num, len(gs))
			for i := range gs {
				m[i] = row()
				for j := range gs {
					if i == j {
						continue
					}
					if err := ctx.Err(); err != nil {
						return err
					}
					// Row i's stream issues the copy.
					dst, src := gs[j].dev2, gs[i].dev
					if t.read {
						dst, src = gs[i].dev2, gs[j].dev
					}
					el, err := timeCopies(gs[i].s, dst, src, n, r.o.Warmup, r.o.Iters)
					if err != nil {
						return fmt.Errorf("%s %d,%d: %w", t.name, devs[i].Index, devs[j].Index, err)
					}
					m[i][j] = bw(el)
				}
			}
			if err := add(NVBTest{Name: t.name, Title: t.title, Values: m}); err != nil {
				return err
			}
		}
	}
	return nil
}

// allAtOnce times Iters copies on every GPU's stream at once and returns
// each stream's elapsed time (as a float of nanoseconds in a Num row, for
// the caller to turn into GB/s). Every stream is held by the spin kernel
// while its copies are queued and all are released together; without a
// spin kernel the note says they started as issued.
func (r *runner) allAtOnce(rt Runtime, n int, at func(i int) (s Stream, dst, src Buffer), size int64) ([]Num, string, error) {
	out := make([]Num, n)
	for i := range out {
		out[i] = nan()
	}
	for i := 0; i < n; i++ {
		s, dst, src := at(i)
		for k := 0; k < r.o.Warmup; k++ {
			if err := s.Copy(dst, src, size); err != nil {
				return nil, "", err
			}
		}
		if err := s.Sync(); err != nil {
			return nil, "", err
		}
	}
	var releases []func() error
	note := ""
	defer func() {
		for _, rel := range releases {
			rel()
		}
	}()
	starts := make([]Event, n)
	ends := make([]Event, n)
	for i := 0; i < n; i++ {
		s, dst, src := at(i)
		if rel, err := rt.Hold(s); err == nil {
			releases = append(releases, rel)
		} else if note == "" {
			note = "all-at-once copies started as issued (no spin kernel: " + oneLine(err.Error()) + ")"
		}
		e, err := s.Record()
		if err != nil {
			return nil, "", err
		}
		defer e.Close()
		starts[i] = e
		for k := 0; k < r.o.Iters; k++ {
			if err := s.Copy(dst, src, size); err != nil {
				return nil, "", err
			}
		}
		if ends[i], err = s.Record(); err != nil {
			return nil, "", err
		}
		defer ends[i].Close()
	}
	for _, rel := range releases {
		if err := rel(); err != nil {
			return nil, "", err
		}
	}
	releases = nil
	for i := 0; i < n; i++ {
		s, _, _ := at(i)
		if err := s.Sync(); err != nil {
			return nil, "", err
		}
		d, err := ends[i].Since(starts[i])
		if err != nil {
			return nil, "", err
		}
		out[i] = Num(d)
	}
	return out, note, nil
}
