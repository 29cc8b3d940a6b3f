package hwbench

import (
	"context"
	"fmt"
	"time"
)

// CopyResult is the copy probe: host-to-device, device-to-host (pinned and
// pageable host memory) and device-local copy bandwidth per GPU, each
// timed with CUDA events over Iters back-to-back copies of Bytes after
// Warmup untimed ones. Bandwidth counts the bytes copied once (a D2D copy
// reads and writes them, so device memory moves twice as much).
type CopyResult struct {
	Stamp
	Bytes  int64     `json:"bytes"`
	Iters  int       `json:"iters"`
	Warmup int       `json:"warmup_iters"`
	GPUs   []CopyRow `json:"gpus"`
}

// CopyRow is one GPU's copy bandwidths in GB/s (1e9 B/s); null when a
// copy failed.
type CopyRow struct {
	// GPU is the CUDA ordinal.
	GPU         int    `json:"gpu"`
	BusID       string `json:"bus_id,omitempty"`
	H2DPinned   Num    `json:"h2d_pinned_gbps"`
	D2HPinned   Num    `json:"d2h_pinned_gbps"`
	H2DPageable Num    `json:"h2d_pageable_gbps"`
	D2HPageable Num    `json:"d2h_pageable_gbps"`
	D2D         Num    `json:"d2d_gbps"`
	// NUMA is the GPU's node (sysfs numa_node; -1 unknown). HostNUMA is
	// the node the pinned memory of the pinned rows was bound to (the
	// GPU's own; -1: not bound, the kernel placed it). FarNUMA is another
	// node, bound for the *_far rows (-1: none, a one-node machine).
	NUMA         int `json:"numa"`
	HostNUMA     int `json:"host_numa"`
	FarNUMA      int `json:"far_numa"`
	H2DPinnedFar Num `json:"h2d_pinned_far_gbps"`
	D2HPinnedFar Num `json:"d2h_pinned_far_gbps"`
}

// timeCopies enqueues warmup untimed and iters timed copies of n bytes on
// s and returns the event-timed duration of the timed ones.
func timeCopies(s Stream, dst, src Buffer, n int64, warmup, iters int) (time.Duration, error) {
	for i := 0; i < warmup; i++ {
		if err := s.Copy(dst, src, n); err != nil {
			return 0, err
		}
	}
	return timeBetweenEvents(s, dst, src, n, iters, nil)
}

// timeBetweenEvents records an event, queues iters copies of n bytes and a
// second event, calls release (when not nil) and only then waits for s,
// and returns the time between the two events.
func timeBetweenEvents(s Stream, dst, src Buffer, n int64, iters int, release func() error) (time.Duration, error) {
	start, err := s.Record()
	if err != nil {
		return 0, err
	}
	defer start.Close()
	for i := 0; i < iters; i++ {
		if err := s.Copy(dst, src, n); err != nil {
			return 0, err
		}
	}
	end, err := s.Record()
	if err != nil {
		return 0, err
	}
	defer end.Close()
	if release != nil {
		if err := release(); err != nil {
			return 0, err
		}
	}
	if err := s.Sync(); err != nil {
		return 0, err
	}
	return end.Since(start)
}

// gbps is bytes per second in GB/s (1e9), NaN for a non-positive duration.
func gbps(bytes float64, d time.Duration) Num {
	if d <= 0 {
		return nan()
	}
	return Num(bytes / d.Seconds() / 1e9)
}

// allocator frees everything it allocated when done.
type allocator struct {
	rt   Runtime
	bufs []Buffer
}

func (a *allocator) alloc(kind MemKind, dev int, n int64) (Buffer, error) {
	b, err := a.rt.Alloc(kind, dev, n)
	if err != nil {
		return Buffer{}, err
	}
	a.bufs = append(a.bufs, b)
	return b, nil
}

func (a *allocator) allocPinned(n int64, numa int) (Buffer, error) {
	b, err := a.rt.AllocPinned(n, numa)
	if err != nil {
		return Buffer{}, err
	}
	a.bufs = append(a.bufs, b)
	return b, nil
}

func (a *allocator) freeAll() error {
	var first error
	for i := len(a.bufs) - 1; i >= 0; i-- {
		if err := a.rt.Free(a.bufs[i]); err != nil && first == nil {
			first = err
		}
	}
	a.bufs = nil
	return first
}

func (r *runner) probeCopy(ctx context.Context) error {
	rt, devs, err := r.gpus()
	if err != nil {
		return err
	}
	n := int64(r.o.CopyBytes)
	res := &CopyResult{Bytes: n, Iters: r.o.Iters, Warmup: r.o.Warmup}
	res.Stamp = r.stamp() // a probe that stops early still says where and when
	r.rep.Copy = res
	var failures []string
	for _, d := range devs {
		if err := ctx.Err(); err != nil {
			return err
		}
		row, err := r.copyOne(rt, d, n)
		if err != nil {
			failures = append(failures, fmt.Sprintf("GPU %d: %v", d.Index, err))
		}
		res.GPUs = append(res.GPUs, row)
		res.Stamp = r.stamp()
		r.progressf("copy GPU %d: h2d %.1f / d2h %.1f GB/s pinned, h2d %.1f / d2h %.1f pageable, d2d %.1f",
			d.Index, row.H2DPinned, row.D2HPinned, row.H2DPageable, row.D2HPageable, row.D2D)
		if err := r.flush(); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("%s", joinShort(failures))
	}
	return nil
}

func (r *runner) copyOne(rt Runtime, d DeviceInfo, n int64) (CopyRow, error) {
	row := CopyRow{GPU: d.Index, BusID: d.BusID, H2DPinned: nan(), D2HPinned: nan(), H2DPageable: nan(), D2HPageable: nan(), D2D: nan(),
		NUMA: pciNUMA(r.b.Files(), d.BusID), HostNUMA: -1, FarNUMA: -1, H2DPinnedFar: nan(), D2HPinnedFar: nan()}
	a := &allocator{rt: rt}
	defer a.freeAll()
	dev, err := a.alloc(DeviceMem, d.Index, n)
	if err != nil {
		return row, err
	}
	dev2, err := a.alloc(DeviceMem, d.Index, n)
	if err != nil {
		return row, err
	}
	// Pinned memory on the GPU's own node, so the figure is the near
	// one; and on another node, for the far figure.
	pinned, err := a.allocPinned(n, row.NUMA)
	if err != nil {
		return row, err
	}
	row.HostNUMA = pinned.NUMA
	var far Buffer
	if row.NUMA >= 0 {
		for _, node := range numaNodes(r.b.Files()) {
			if node == row.NUMA {
				continue
			}
			if far, err = a.allocPinned(n, node); err != nil {
				return row, err
			}
			row.FarNUMA = far.NUMA
			break
		}
	}
	pageable, err := a.alloc(PageableMem, 0, n)
	if err != nil {
		return row, err
	}
	s, err := rt.NewStream(d.Index)
	if err != nil {
		return row, err
	}
	defer s.Close()
	cases := []struct {
		out      *Num
		dst, src Buffer
	}{
		{&row.H2DPinned, dev, pinned},
		{&row.D2HPinned, pinned, dev},
		{&row.H2DPageable, dev, pageable},
		{&row.D2HPageable, pageable, dev},
		{&row.D2D, dev2, dev},
	}
	if row.FarNUMA >= 0 {
		cases = append(cases, []struct {
			out      *Num
			dst, src Buffer
		}{{&row.H2DPinnedFar, dev, far}, {&row.D2HPinnedFar, far, dev}}...)
	}
	var first error
	for _, c := range cases {
		el, err := timeCopies(s, c.dst, c.src, n, r.o.Warmup, r.o.Iters)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("%s to %s: %w", c.src.Kind, c.dst.Kind, err)
			}
			continue
		}
		*c.out = gbps(float64(n)*float64(r.o.Iters), el)
	}
	return row, first
}
