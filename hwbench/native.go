package hwbench

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collsim/collsim/hwbench/internal/cuda"
	"github.com/collsim/collsim/hwbench/internal/nccl"
	"github.com/collsim/collsim/hwbench/internal/nvmlinfo"
	"github.com/collsim/collsim/hwbench/internal/verbs"
	"github.com/collsim/collsim/model"
)

// Native is the real machine: the CUDA runtime loaded at Open, NVML, NCCL
// and libibverbs loaded when a probe first needs them, each once.
type Native struct {
	rt *cuda.Runtime
	// rtErr is why there is no runtime (OpenFor of the topo probe alone).
	rtErr error
	files fs.FS

	ncclOnce sync.Once
	ncclLib  *nccl.Lib
	ncclErr  error

	verbsOnce sync.Once
	verbsLib  *verbs.Lib
	verbsErr  error

	invOnce sync.Once
	inv     *Inventory
	invErr  error
}

// Open loads the CUDA runtime (libcudart.so.13, .12 or .11) and checks that
// it sees at least one GPU. Without the library the error wraps
// ErrLibraryNotFound and names the sonames tried; in a build without cgo it
// wraps ErrUnsupported.
func Open() (*Native, error) {
	rt, n, passed, err := cuda.LoadUsable(cuda.Sonames)
	if rt == nil {
		return nil, fmt.Errorf("hwbench: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("hwbench: no usable GPU: %w", err)
	}
	if passed != "" {
		fmt.Fprintf(os.Stderr, "hwbench: using %s; passed over a runtime the driver is too old for (%s)\n", rt.Soname(), passed)
	}
	if n == 0 {
		return nil, fmt.Errorf("hwbench: %s sees no GPU", rt.Soname())
	}
	return &Native{rt: rt, files: os.DirFS("/")}, nil
}

// OpenFor is Open for a run of the given probes: the topo probe needs only
// NVML, sysfs and libibverbs, so a run of topo alone proceeds without a
// CUDA runtime where NVML answers (a node with the driver but no
// toolkit), its CUDA device list left out; any other probe, or no driver,
// fails as Open does.
func OpenFor(probes []string) (*Native, error) {
	n, err := Open()
	if err == nil || !errors.Is(err, ErrLibraryNotFound) || len(probes) == 0 || slices.ContainsFunc(probes, func(p string) bool { return p != "topo" }) {
		return n, err
	}
	nat := &Native{rtErr: err, files: os.DirFS("/")}
	if _, ierr := nat.Inventory(); ierr != nil {
		// No driver either: a machine without a GPU stops at once, as
		// Open does.
		return nil, err
	}
	return nat, nil
}

// Hostname returns os.Hostname's short form (up to the first dot), as
// nccl-tests prints it.
func (n *Native) Hostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	if net.ParseIP(h) == nil {
		if i := strings.IndexByte(h, '.'); i > 0 {
			h = h[:i]
		}
	}
	return h, nil
}

// Files returns the root file system.
func (n *Native) Files() fs.FS { return n.files }

// Versions reports the driver, CUDA and NCCL versions; it loads NCCL (and
// NVML for the driver version) if no probe has yet.
func (n *Native) Versions() Versions {
	v := Versions{Libraries: map[string]string{}}
	if n.rt != nil {
		v.Libraries["cudart"] = n.rt.Soname()
		if x, err := n.rt.DriverVersion(); err == nil {
			v.CUDADriver = cuda.VersionString(x)
		}
		if x, err := n.rt.RuntimeVersion(); err == nil {
			v.CUDARuntime = cuda.VersionString(x)
		}
	}
	if l, err := n.nccl(); err == nil {
		v.Libraries["nccl"] = l.Soname()
		if x, err := l.Version(); err == nil {
			v.NCCL = nccl.VersionString(x)
		}
	}
	if inv, err := n.Inventory(); err == nil && inv.Driver != "" {
		v.Driver = inv.Driver
		v.Libraries["nvml"] = nvmlinfo.Sonames[0]
	} else {
		v.Driver = driverFromProc(n.files)
	}
	return v
}

// Inventory queries NVML once.
func (n *Native) Inventory() (*Inventory, error) {
	n.invOnce.Do(func() {
		info, err := nvmlinfo.Query()
		if err != nil {
			n.invErr = err
			return
		}
		inv := &Inventory{Driver: info.Driver, CUDADriver: cuda.VersionString(info.CUDADriver), NVML: info.NVMLVersion}
		for _, g := range info.GPUs {
			gi := GPUInfo{Index: g.Index, Name: g.Name, UUID: g.UUID, BusID: g.BusID, MemoryBytes: g.MemoryBytes, FreeBytes: g.FreeBytes, NUMA: g.NUMA,
				PCIe: PCIeLink{Gen: g.PCIeGen, Width: g.PCIeWidth, MaxGen: g.PCIeMaxGen, MaxWidth: g.PCIeMax}}
			if g.CCMajor > 0 {
				gi.ComputeCapability = fmt.Sprintf("%d.%d", g.CCMajor, g.CCMinor)
			}
			for _, l := range g.NVLinks {
				gi.NVLinks = append(gi.NVLinks, NVLinkInfo{Link: l.Link, Active: l.Active, Version: l.Version, RemoteBusID: l.Remote, RemoteType: l.RemoteType})
			}
			inv.GPUs = append(inv.GPUs, gi)
		}
		for _, p := range info.Pairs {
			inv.Pairs = append(inv.Pairs, GPUPair{A: p.A, B: p.B, Ancestor: p.Ancestor, P2P: p.P2P})
		}
		n.inv = inv
	})
	if n.invErr != nil {
		return nil, n.invErr
	}
	c := *n.inv
	return &c, nil
}

// Runtime returns the CUDA runtime.
func (n *Native) Runtime() (Runtime, error) {
	if n.rt == nil {
		return nil, n.rtErr
	}
	return nativeRuntime{n.rt, n}, nil
}

func (n *Native) nccl() (*nccl.Lib, error) {
	n.ncclOnce.Do(func() { n.ncclLib, n.ncclErr = nccl.Load() })
	return n.ncclLib, n.ncclErr
}

// Collectives loads NCCL once.
func (n *Native) Collectives() (Collectives, error) {
	if n.rt == nil {
		return nil, n.rtErr
	}
	l, err := n.nccl()
	if err != nil {
		return nil, err
	}
	return nativeNCCL{rt: n.rt, l: l}, nil
}

// RDMA loads libibverbs once.
func (n *Native) RDMA() (RDMA, error) {
	n.verbsOnce.Do(func() { n.verbsLib, n.verbsErr = verbs.Load() })
	if n.verbsErr != nil {
		return nil, n.verbsErr
	}
	return nativeRDMA{n.verbsLib}, nil
}

type nativeRuntime struct {
	rt *cuda.Runtime
	n  *Native
}

func (r nativeRuntime) Devices() ([]DeviceInfo, error) {
	n, err := r.rt.DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, n)
	for i := range out {
		d := DeviceInfo{Index: i}
		if b, err := r.rt.PCIBusID(i); err == nil {
			d.BusID = strings.ToLower(b)
		}
		major, e1 := r.rt.Attribute(cuda.AttrComputeCapabilityMajor, i)
		minor, e2 := r.rt.Attribute(cuda.AttrComputeCapabilityMinor, i)
		if e1 == nil && e2 == nil {
			d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		}
		d.SMs, _ = r.rt.Attribute(cuda.AttrMultiProcessorCount, i)
		d.CopyEngines, _ = r.rt.Attribute(cuda.AttrAsyncEngineCount, i)
		out[i] = d
	}
	// Memory comes from NVML: cudaMemGetInfo would create a context on
	// every GPU from every process (64 on an 8-GPU node with 8 ranks).
	if inv, err := r.n.Inventory(); err == nil {
		for i := range out {
			for _, g := range inv.GPUs {
				if g.BusID == out[i].BusID {
					out[i].MemoryBytes, out[i].FreeBytes = g.MemoryBytes, g.FreeBytes
				}
			}
		}
	}
	return out, nil
}

func (r nativeRuntime) Alloc(kind MemKind, dev int, n int64) (Buffer, error) {
	b := Buffer{Kind: kind, Device: dev, Size: n, NUMA: -1}
	if kind != DeviceMem {
		b.Device = 0
	}
	sz := uint64(max(n, 1))
	var p cuda.Ptr
	var err error
	switch kind {
	case DeviceMem:
		if p, err = r.rt.Malloc(dev, sz); err == nil {
			if err = r.rt.Memset(dev, p, 0, sz); err != nil {
				r.rt.Free(dev, p)
			}
		}
	case PinnedMem:
		p, _, err = r.rt.MallocHostNUMA(sz, -1)
	case PageableMem:
		p, err = cuda.MallocPageable(sz)
	default:
		err = fmt.Errorf("hwbench: unknown memory kind %v", kind)
	}
	if err != nil {
		return Buffer{}, fmt.Errorf("allocating %s of %s memory: %w", model.FormatBytes(model.Bytes(n)), kind, err)
	}
	b.Addr = uint64(p)
	return b, nil
}

func (r nativeRuntime) AllocPinned(n int64, numa int) (Buffer, error) {
	p, bound, err := r.rt.MallocHostNUMA(uint64(max(n, 1)), numa)
	if err != nil {
		return Buffer{}, fmt.Errorf("allocating %s of pinned memory on NUMA node %d: %w", model.FormatBytes(model.Bytes(n)), numa, err)
	}
	b := Buffer{Kind: PinnedMem, Addr: uint64(p), Size: n, NUMA: -1}
	if bound {
		b.NUMA = numa
	}
	return b, nil
}

func (r nativeRuntime) HostBytes(b Buffer) ([]byte, error) {
	if b.Kind == DeviceMem {
		return nil, fmt.Errorf("hwbench: host access to device memory")
	}
	if b.Size == 0 {
		return []byte{}, nil
	}
	return cuda.HostSlice(cuda.Ptr(b.Addr), int(b.Size)), nil
}

func (r nativeRuntime) Free(b Buffer) error {
	switch b.Kind {
	case DeviceMem:
		return r.rt.Free(b.Device, cuda.Ptr(b.Addr))
	case PinnedMem:
		return r.rt.FreeHost(cuda.Ptr(b.Addr))
	case PageableMem:
		cuda.FreePageable(cuda.Ptr(b.Addr))
		return nil
	}
	return fmt.Errorf("hwbench: unknown memory kind %v", b.Kind)
}

func (r nativeRuntime) CanAccessPeer(dev, peer int) (bool, error) {
	return r.rt.CanAccessPeer(dev, peer)
}

func (r nativeRuntime) SetPeerAccess(dev, peer int, on bool) error {
	if on {
		return r.rt.EnablePeerAccess(dev, peer)
	}
	return r.rt.DisablePeerAccess(dev, peer)
}

func (r nativeRuntime) ExportDMABuf(b Buffer) (DMABuf, error) {
	if b.Kind != DeviceMem {
		return DMABuf{}, fmt.Errorf("hwbench: DMA-BUF export of %s memory", b.Kind)
	}
	ok, err := r.rt.DriverAttribute(cuda.AttrDMABufSupported, b.Device)
	if err != nil {
		return DMABuf{}, err
	}
	if ok == 0 {
		return DMABuf{}, fmt.Errorf("the driver reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0 on GPU %d (DMA-BUF needs the open GPU kernel modules and Linux 5.12 or later)", b.Device)
	}
	page := uint64(os.Getpagesize())
	base := b.Addr &^ (page - 1)
	end := (b.Addr + uint64(b.Size) + page - 1) &^ (page - 1)
	fd, err := r.rt.DMABufFD(cuda.Ptr(base), end-base)
	if err != nil {
		return DMABuf{}, err
	}
	return DMABuf{FD: fd, Base: base, Length: end - base, Offset: b.Addr - base}, nil
}

func (r nativeRuntime) CloseDMABuf(d DMABuf) error { return cuda.CloseFD(d.FD) }

// holdTimeoutClocks bounds the spin kernel: about 5 s at 2 GHz, should the
// host never release it.
const holdTimeoutClocks = 10_000_000_000

func (r nativeRuntime) Hold(s Stream) (func() error, error) {
	ns, ok := s.(*nativeStream)
	if !ok {
		return nil, fmt.Errorf("hwbench: stream of another backend")
	}
	host, dev, err := r.rt.MappedFlag()
	if err != nil {
		return nil, err
	}
	if err := r.rt.LaunchDelay(ns.dev, ns.s, dev, holdTimeoutClocks); err != nil {
		r.rt.FreeHost(host)
		return nil, err
	}
	return func() error {
		// Set the flag and return at once, so that a caller holding
		// several streams releases them together (nvbandwidth's
		// all-at-once tests); the kernel may still read the flag, so it
		// is freed once the stream has passed it (Sync or Close).
		cuda.SetFlag(host, 1)
		ns.flags = append(ns.flags, host)
		return nil
	}, nil
}

// freeFlags frees the spin kernels' flags of a stream that has passed
// them.
func (s *nativeStream) freeFlags() error {
	var err error
	for _, h := range s.flags {
		if ferr := s.rt.FreeHost(h); err == nil {
			err = ferr
		}
	}
	s.flags = nil
	return err
}

func (r nativeRuntime) NewStream(dev int) (Stream, error) {
	s, err := r.rt.StreamCreate(dev)
	if err != nil {
		return nil, err
	}
	return &nativeStream{rt: r.rt, dev: dev, s: s}, nil
}

type nativeStream struct {
	rt  *cuda.Runtime
	dev int
	s   cuda.Stream
	// flags are released spin-kernel flags to free once the stream has
	// passed them.
	flags []cuda.Ptr
}

type nativeEvent struct {
	rt *cuda.Runtime
	e  cuda.Event
}

func (s *nativeStream) Device() int { return s.dev }

func (s *nativeStream) Copy(dst, src Buffer, n int64) error {
	d, sp := cuda.Ptr(dst.Addr), cuda.Ptr(src.Addr)
	switch {
	case src.Kind == DeviceMem && dst.Kind == DeviceMem && src.Device != dst.Device:
		return s.rt.MemcpyPeerAsync(s.dev, d, dst.Device, sp, src.Device, uint64(n), s.s)
	case src.Kind == DeviceMem && dst.Kind == DeviceMem:
		return s.rt.MemcpyAsync(s.dev, d, sp, uint64(n), cuda.DeviceToDevice, s.s)
	case src.Kind == DeviceMem:
		return s.rt.MemcpyAsync(s.dev, d, sp, uint64(n), cuda.DeviceToHost, s.s)
	case dst.Kind == DeviceMem:
		return s.rt.MemcpyAsync(s.dev, d, sp, uint64(n), cuda.HostToDevice, s.s)
	}
	return s.rt.MemcpyAsync(s.dev, d, sp, uint64(n), cuda.HostToHost, s.s)
}

func (s *nativeStream) Record() (Event, error) {
	e, err := s.rt.EventCreate(s.dev)
	if err != nil {
		return nil, err
	}
	if err := s.rt.EventRecord(s.dev, e, s.s); err != nil {
		s.rt.EventDestroy(e)
		return nil, err
	}
	return &nativeEvent{rt: s.rt, e: e}, nil
}

func (s *nativeStream) Wait(e Event) error {
	ne, ok := e.(*nativeEvent)
	if !ok {
		return fmt.Errorf("hwbench: event of another backend")
	}
	return s.rt.StreamWaitEvent(s.dev, s.s, ne.e)
}

func (s *nativeStream) Sync() error {
	if err := s.rt.StreamSynchronize(s.dev, s.s); err != nil {
		return err
	}
	return s.freeFlags()
}

func (s *nativeStream) Close() error {
	var err error
	if len(s.flags) > 0 {
		// Released kernels may still be queued: let them pass their
		// flags before the flags go.
		if err = s.rt.StreamSynchronize(s.dev, s.s); err == nil {
			err = s.freeFlags()
		}
	}
	if derr := s.rt.StreamDestroy(s.dev, s.s); err == nil {
		err = derr
	}
	return err
}

func (e *nativeEvent) Since(start Event) (time.Duration, error) {
	ns, ok := start.(*nativeEvent)
	if !ok {
		return 0, fmt.Errorf("hwbench: event of another backend")
	}
	if err := e.rt.EventSynchronize(e.e); err != nil {
		return 0, err
	}
	return e.rt.EventElapsed(ns.e, e.e)
}

func (e *nativeEvent) Close() error { return e.rt.EventDestroy(e.e) }

type nativeNCCL struct {
	rt *cuda.Runtime
	l  *nccl.Lib
}

type nativeComm struct {
	l            *nccl.Lib
	c            nccl.Comm
	root         int
	rank, nranks int
}

func (n nativeNCCL) InitAll(devs []int) ([]Comm, error) {
	cs, err := n.l.InitAll(devs)
	if err != nil {
		return nil, err
	}
	out := make([]Comm, len(cs))
	for i, c := range cs {
		out[i] = &nativeComm{l: n.l, c: c, rank: i, nranks: len(cs)}
	}
	return out, nil
}

func (n nativeNCCL) UniqueID() ([]byte, error) {
	id, err := n.l.GetUniqueID()
	if err != nil {
		return nil, err
	}
	return id[:], nil
}

func (n nativeNCCL) InitRank(id []byte, nranks, rank, dev int) (Comm, error) {
	var uid nccl.UniqueID
	if len(id) != len(uid) {
		return nil, fmt.Errorf("hwbench: NCCL unique id of %d bytes, want %d", len(id), len(uid))
	}
	copy(uid[:], id)
	// ncclCommInitRank uses the calling thread's current device.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := n.rt.SetDevice(dev); err != nil {
		return nil, err
	}
	c, err := n.l.InitRank(uid, nranks, rank)
	if err != nil {
		return nil, err
	}
	return &nativeComm{l: n.l, c: c, rank: rank, nranks: nranks}, nil
}

// CaptureDebug sets NCCL_DEBUG=INFO (unless the user asked for TRACE) and
// NCCL_DEBUG_FILE=path in the process environment, which NCCL reads when
// it initialises (the first communicator); with cgo, os.Setenv reaches the
// C environment NCCL's getenv sees.
func (n nativeNCCL) CaptureDebug(path string) error {
	if os.Getenv("NCCL_DEBUG") != "TRACE" {
		if err := os.Setenv("NCCL_DEBUG", "INFO"); err != nil {
			return err
		}
	}
	return os.Setenv("NCCL_DEBUG_FILE", path)
}

// Group runs fn inside ncclGroupStart/ncclGroupEnd on one locked OS thread:
// NCCL groups are per thread.
func (n nativeNCCL) Group(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := n.l.GroupStart(); err != nil {
		return err
	}
	ferr := fn()
	gerr := n.l.GroupEnd()
	if ferr != nil {
		return ferr
	}
	return gerr
}

func (c *nativeComm) Launch(op model.Collective, send, recv Buffer, count int64, s Stream) error {
	ns, ok := s.(*nativeStream)
	if !ok {
		return fmt.Errorf("hwbench: stream of another backend")
	}
	st, n := uintptr(ns.s), uint64(count)
	switch op {
	case model.AllReduce:
		return c.l.AllReduce(send.Addr, recv.Addr, n, nccl.Float32, nccl.Sum, c.c, st)
	case model.AllGather:
		return c.l.AllGather(send.Addr, recv.Addr, n, nccl.Float32, c.c, st)
	case model.ReduceScatter:
		return c.l.ReduceScatter(send.Addr, recv.Addr, n, nccl.Float32, nccl.Sum, c.c, st)
	case model.Broadcast:
		return c.l.Broadcast(send.Addr, recv.Addr, n, nccl.Float32, c.root, c.c, st)
	case model.Reduce:
		return c.l.Reduce(send.Addr, recv.Addr, n, nccl.Float32, nccl.Sum, c.root, c.c, st)
	case model.AlltoAll:
		// As nccl-tests: one send and one receive of count elements per
		// peer, at the peer's offset, inside the caller's group.
		per := uint64(count) * ncclElemSize
		for p := 0; p < c.nranks; p++ {
			if err := c.l.Send(send.Addr+uint64(p)*per, n, nccl.Float32, p, c.c, st); err != nil {
				return err
			}
			if err := c.l.Recv(recv.Addr+uint64(p)*per, n, nccl.Float32, p, c.c, st); err != nil {
				return err
			}
		}
		return nil
	case model.SendRecv:
		// As nccl-tests: send to the next rank, receive from the previous.
		if err := c.l.Send(send.Addr, n, nccl.Float32, (c.rank+1)%c.nranks, c.c, st); err != nil {
			return err
		}
		return c.l.Recv(recv.Addr, n, nccl.Float32, (c.rank-1+c.nranks)%c.nranks, c.c, st)
	}
	return fmt.Errorf("hwbench: %s is not bound", op)
}

func (c *nativeComm) Close() error { return c.l.Destroy(c.c) }
func (c *nativeComm) Abort() error { return c.l.Abort(c.c) }

type nativeRDMA struct{ l *verbs.Lib }

func (r nativeRDMA) HCAs() ([]HCA, error) {
	devs, err := r.l.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]HCA, len(devs))
	for i, d := range devs {
		h := HCA{Name: d.Name, NUMA: -1, FirmwareVersion: d.FirmwareVersion, NodeGUID: d.NodeGUID}
		for _, p := range d.Ports {
			hp := HCAPort{Port: p.Num, State: verbs.StateName(p.State), PhysState: verbs.PhysStateName(p.PhysState),
				LinkLayer: verbs.LinkLayerName(p.LinkLayer), RateGbps: p.RateGbps(), ActiveMTU: verbs.MTUBytes(p.ActiveMTU), LID: p.LID}
			for idx := 0; idx < p.GIDTableLen; idx++ {
				if g, ok := p.GIDs[idx]; ok {
					hp.GIDs = append(hp.GIDs, GID{Index: idx, GID: g.String()})
				}
			}
			h.Ports = append(h.Ports, hp)
		}
		out[i] = h
	}
	return out, nil
}

func (r nativeRDMA) Loopback(dev string, rt Route) (Loopback, error) {
	vr, err := verbsRoute(rt)
	if err != nil {
		return nil, err
	}
	ctx, err := r.l.Open(dev)
	if err != nil {
		return nil, err
	}
	lb, err := ctx.Loopback(vr)
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &nativeLoopback{ctx: ctx, lb: lb}, nil
}

// verbsRoute converts rt to the binding's route: MTU 1024 when unset, and
// the GID parsed when a GID index is given.
func verbsRoute(rt Route) (verbs.Route, error) {
	vr := verbs.Route{Port: rt.Port, LID: rt.LID, UseGID: rt.GIDIndex >= 0, GIDIndex: rt.GIDIndex, MTU: verbs.MTUEnum(rt.MTU)}
	if vr.MTU == 0 {
		vr.MTU = verbs.MTUEnum(1024)
	}
	if vr.UseGID {
		ip := net.ParseIP(rt.GID)
		if ip == nil {
			return vr, fmt.Errorf("hwbench: GID %q is not an address", rt.GID)
		}
		copy(vr.GID[:], ip.To16())
	}
	return vr, nil
}

type nativeLoopback struct {
	ctx *verbs.Context
	lb  *verbs.Loopback
}

type nativeRegion struct{ mr *verbs.MR }

func (r nativeRegion) Close() error { return r.mr.Close() }

// asRegion wraps a registration's result as a Region.
func asRegion(mr *verbs.MR, err error) (Region, error) {
	if err != nil {
		return nil, err
	}
	return nativeRegion{mr}, nil
}

func (l *nativeLoopback) Register(b Buffer) (Region, error) {
	return asRegion(l.lb.Register(b.Addr, uint64(b.Size)))
}

func (l *nativeLoopback) RegisterDMABuf(b Buffer, d DMABuf) (Region, error) {
	return asRegion(l.lb.RegisterDMABuf(d.Offset, uint64(b.Size), b.Addr, d.FD))
}

func regionMR(r Region) (*verbs.MR, error) {
	nr, ok := r.(nativeRegion)
	if !ok {
		return nil, fmt.Errorf("hwbench: region of another backend")
	}
	return nr.mr, nil
}

// regionMRs returns the memory regions behind src and dst.
func regionMRs(src, dst Region) (s, d *verbs.MR, err error) {
	if s, err = regionMR(src); err != nil {
		return nil, nil, err
	}
	if d, err = regionMR(dst); err != nil {
		return nil, nil, err
	}
	return s, d, nil
}

func (l *nativeLoopback) WriteBandwidth(src, dst Region, size int64, iters, depth int) (time.Duration, error) {
	s, d, err := regionMRs(src, dst)
	if err != nil {
		return 0, err
	}
	return l.lb.WriteBandwidth(s, d, uint64(size), iters, depth)
}

func (l *nativeLoopback) WriteLatency(src, dst Region, size int64, iters int) (time.Duration, error) {
	s, d, err := regionMRs(src, dst)
	if err != nil {
		return 0, err
	}
	return l.lb.WriteLatency(s, d, uint64(size), iters)
}

func (l *nativeLoopback) Close() error { return closeThenContext(l.lb, l.ctx) }

// closeThenContext closes c, then the device context it was made on, and
// returns the first error.
func closeThenContext(c interface{ Close() error }, ctx *verbs.Context) error {
	err := c.Close()
	if cerr := ctx.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r nativeRDMA) Endpoint(dev string, port, qps int) (Endpoint, error) {
	ctx, err := r.l.Open(dev)
	if err != nil {
		return nil, err
	}
	ep, err := ctx.Endpoint(port, qps)
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &nativeEndpoint{ctx: ctx, ep: ep}, nil
}

type nativeEndpoint struct {
	ctx *verbs.Context
	ep  *verbs.Endpoint
}

func (e *nativeEndpoint) QPNs() []uint32 { return e.ep.QPNs() }

func (e *nativeEndpoint) Connect(i int, remoteQPN uint32, rt Route) error {
	vr, err := verbsRoute(rt)
	if err != nil {
		return err
	}
	return e.ep.Connect(i, remoteQPN, vr)
}

func (e *nativeEndpoint) Register(b Buffer) (Region, error) {
	return asRegion(e.ep.Register(b.Addr, uint64(b.Size)))
}

func (e *nativeEndpoint) RegisterDMABuf(b Buffer, d DMABuf) (Region, error) {
	return asRegion(e.ep.RegisterDMABuf(d.Offset, uint64(b.Size), b.Addr, d.FD))
}

func (e *nativeEndpoint) Remote(r Region) RemoteRegion {
	mr, err := regionMR(r)
	if err != nil {
		return RemoteRegion{}
	}
	addr, rkey := mr.Keys()
	return RemoteRegion{Addr: addr, RKey: rkey}
}

func (e *nativeEndpoint) WriteBandwidth(src Region, dst RemoteRegion, size int64, iters, depth int) (time.Duration, error) {
	s, err := regionMR(src)
	if err != nil {
		return 0, err
	}
	return e.ep.WriteBandwidth(s, dst.Addr, dst.RKey, uint64(size), iters, depth)
}

func (e *nativeEndpoint) WriteLatency(src Region, dst RemoteRegion, size int64, iters int) (time.Duration, error) {
	s, err := regionMR(src)
	if err != nil {
		return 0, err
	}
	return e.ep.WriteLatency(s, dst.Addr, dst.RKey, uint64(size), iters)
}

func (e *nativeEndpoint) Close() error { return closeThenContext(e.ep, e.ctx) }
