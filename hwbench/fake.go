package hwbench

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/collsim/collsim/model"
)

// FakeConfig describes the machine a Fake simulates. Zero fields take the
// defaults NewFake documents.
type FakeConfig struct {
	// Hostname (default "fakehost").
	Hostname string
	// GPUs (default 4) named GPUName (default "NVIDIA H100 80GB HBM3"),
	// split over two sockets (one when there is a single GPU).
	GPUs    int
	GPUName string
	// NVLinks is the active NVLinks per GPU (default 18; -1 for none),
	// to NVSwitches unless Mesh spreads them evenly over the other GPUs.
	NVLinks int
	Mesh    bool
	// NICs is the RDMA devices (default 2, one per socket; -1 for none),
	// each one port of NICRate Gb/s (default 400), InfiniBand unless
	// Ethernet (RoCE).
	NICs     int
	NICRate  int
	Ethernet bool
	// NoGPUDirect makes registering GPU memory fail both ways (NoPeerMem
	// and NoDMABuf together).
	NoGPUDirect bool
	// NoPeerMem leaves the nvidia_peermem module out, so ibv_reg_mr of
	// GPU memory fails.
	NoPeerMem bool
	// NoDMABuf makes the driver report no DMA-BUF support, so the
	// DMA-BUF export fails.
	NoDMABuf bool
	// IssueCost is the host time every stream call takes (0: none); with
	// it, small copies issued one by one are timed at the issue rate
	// unless a spin kernel holds the stream.
	IssueCost time.Duration
	// NoSpinKernel makes Hold fail, as on a machine where the spin
	// kernel cannot be loaded.
	NoSpinKernel bool
	// FailCollective makes every launch of the named collective
	// ("allgather") fail, as a broken NCCL transport would.
	FailCollective string
	// Corrupt makes the named collective ("reducescatter") return one
	// wrong element per rank, for the data check's tests.
	Corrupt string
	// World joins this fake with the fakes of the other processes of a
	// multi-process test, so their communicators exchange data.
	World *FakeWorld
	// Missing lists libraries to pretend are absent: "nvml", "cudart",
	// "nccl", "ibverbs".
	Missing []string
}

// Fake is a deterministic simulated machine: a Backend whose GPUs, copies,
// collectives and RDMA take times from a simple model (a latency plus bytes
// over a bandwidth), and whose /sys and /proc are an in-memory tree. It
// exists to test the probes and to try the command without hardware; its
// numbers are plausible for an H100 server, not measurements.
type Fake struct {
	cfg   FakeConfig
	files *memFS
	inv   *Inventory
	hcas  []HCA

	mu sync.Mutex
	// now is the simulated host time (seconds): work enqueued on a stream
	// starts no earlier than now, and waiting for a stream moves now to
	// the end of its work.
	now       float64
	next      uint64
	live      map[uint64]Buffer
	peer      map[[2]int]bool
	ids       int
	seenIDs   [][]byte
	fds       int
	debugPath string // NCCL_DEBUG_FILE, "" when not capturing
	// uplink is when each socket's PCIe uplink is free, per direction
	// (1: host to device).
	uplink map[[2]int]float64
	data   map[uint64][]byte // contents of the allocations that hold data
	fresh  map[uint64]bool   // allocations written by the host since a collective read them
	// destroyed and aborted count ncclCommDestroy and ncclCommAbort calls.
	destroyed, aborted int
}

// Bandwidths (GB/s) and latencies of the fake's timing model.
const (
	fakeH2DPinned   = 55.0
	fakeD2HPinned   = 52.0
	fakeH2DPageable = 21.0
	fakeD2HPageable = 18.0
	fakeH2H         = 10.0
	fakeD2D         = 1500.0
	fakeP2PNVLink   = 370.0
	fakeP2PPCIe     = 25.0
	fakeP2PStaged   = 9.0
	fakeNCCLBusBW   = 360.0
	fakeRDMAEff     = 0.96 // of the line rate
	fakeRDMAGPUEff  = 0.93
	// fakeFarNUMA scales a pinned copy whose host memory sits on the
	// other socket (the fake's figure, not a measurement).
	fakeFarNUMA = 0.8
)

var (
	fakeCopyLatency   = 2 * time.Microsecond
	fakeStagedLatency = 9 * time.Microsecond
	fakeNCCLLatency   = 12 * time.Microsecond
	fakeRDMALatency   = 2 * time.Microsecond
	fakeRDMAGPULat    = 2500 * time.Nanosecond
)

// NewFake builds the simulated machine cfg describes.
func NewFake(cfg FakeConfig) *Fake {
	if cfg.Hostname == "" {
		cfg.Hostname = "fakehost"
	}
	if cfg.GPUs <= 0 {
		cfg.GPUs = 4
	}
	if cfg.GPUName == "" {
		cfg.GPUName = "NVIDIA H100 80GB HBM3"
	}
	if cfg.NVLinks == 0 {
		cfg.NVLinks = 18
	}
	if cfg.NVLinks < 0 {
		cfg.NVLinks = 0
	}
	if cfg.NICs == 0 {
		cfg.NICs = 2
	}
	if cfg.NICs < 0 {
		cfg.NICs = 0
	}
	if cfg.NICRate == 0 {
		cfg.NICRate = 400
	}
	f := &Fake{cfg: cfg, next: 0x7f0000000000, live: map[uint64]Buffer{}, peer: map[[2]int]bool{}, data: map[uint64][]byte{}, fresh: map[uint64]bool{}, uplink: map[[2]int]float64{}}
	f.build()
	return f
}

func (f *Fake) missing(lib string) error {
	for _, m := range f.cfg.Missing {
		if m == lib {
			so := map[string]string{"nvml": "libnvidia-ml.so.1", "cudart": "libcudart.so.13, libcudart.so.12, libcudart.so.11", "nccl": "libnccl.so.2", "ibverbs": "libibverbs.so.1"}[lib]
			return fmt.Errorf("%s: %w (fake: cannot open shared object file: No such file or directory)", so, ErrLibraryNotFound)
		}
	}
	return nil
}

// fakeSockets is how many sockets the fake has.
func (f *Fake) sockets() int {
	if f.cfg.GPUs == 1 {
		return 1
	}
	return 2
}

// build lays out the PCI tree: per socket s one host bridge (root bus
// 0x10+0x80s) with a root port and one PCIe switch; the socket's GPUs and
// NICs sit on the switch's downstream ports.
func (f *Fake) build() {
	m := map[string]memEntry{}
	file := func(name, data string) { m[name] = memEntry{data: []byte(data)} }
	link := func(name, target string) { m[name] = memEntry{data: []byte(target), link: true} }
	pciFiles := func(dir string, numa int, class, vendor string, gen int) {
		file(dir+"/numa_node", fmt.Sprintf("%d\n", numa))
		file(dir+"/class", class+"\n")
		file(dir+"/vendor", vendor+"\n")
		speed := map[int]string{4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe"}[gen]
		file(dir+"/max_link_speed", speed+"\n")
		file(dir+"/current_link_speed", speed+"\n")
		file(dir+"/max_link_width", "16\n")
		file(dir+"/current_link_width", "16\n")
	}
	ns := f.sockets()
	f.inv = &Inventory{Driver: "550.90.07", CUDADriver: "12.4", NVML: "12.550.90.07"}
	type placed struct {
		addr, dir string
		numa      int
	}
	var gpus, nics []placed
	for s := 0; s < ns; s++ {
		bus := 0x10 + 0x80*s
		hb := fmt.Sprintf("pci0000:%02x", bus)
		rp := fmt.Sprintf("0000:%02x:01.0", bus)
		up := fmt.Sprintf("0000:%02x:00.0", bus+1)
		base := "sys/devices/" + hb + "/" + rp + "/" + up
		pciFiles("sys/devices/"+hb+"/"+rp, s, "0x060400", "0x8086", 5)
		pciFiles(base, s, "0x060400", "0x1000", 5)
		link("sys/bus/pci/devices/"+rp, "../../../devices/"+hb+"/"+rp)
		link("sys/bus/pci/devices/"+up, "../../../devices/"+hb+"/"+rp+"/"+up)
		port := 0
		add := func(class, vendor string, gen int) placed {
			down := fmt.Sprintf("0000:%02x:%02x.0", bus+2, port)
			dev := fmt.Sprintf("0000:%02x:00.0", bus+3+port)
			port++
			pciFiles(base+"/"+down, s, "0x060400", "0x1000", 5)
			dir := base + "/" + down + "/" + dev
			pciFiles(dir, s, class, vendor, gen)
			link("sys/bus/pci/devices/"+down, "../../../devices/"+hb+"/"+rp+"/"+up+"/"+down)
			link("sys/bus/pci/devices/"+dev, "../../../devices/"+hb+"/"+rp+"/"+up+"/"+down+"/"+dev)
			return placed{dev, dir, s}
		}
		// GPUs and NICs alternate between the sockets.
		for g := s; g < f.cfg.GPUs; g += ns {
			gpus = append(gpus, add("0x030200", "0x10de", 5))
		}
		for n := s; n < f.cfg.NICs; n += ns {
			nics = append(nics, add("0x020700", "0x15b3", 5))
		}
	}
	// Order GPUs by bus id, as NVML and CUDA (PCI_BUS_ID order) number them.
	sortPlaced := func(p []placed) {
		for i := 1; i < len(p); i++ {
			for j := i; j > 0 && p[j].addr < p[j-1].addr; j-- {
				p[j], p[j-1] = p[j-1], p[j]
			}
		}
	}
	sortPlaced(gpus)
	sortPlaced(nics)
	n := len(gpus)
	for i, g := range gpus {
		info := GPUInfo{Index: i, Name: f.cfg.GPUName, UUID: fmt.Sprintf("GPU-fake-%04d", i), BusID: g.addr,
			MemoryBytes: 80 << 30, NUMA: g.numa, ComputeCapability: "9.0", PCIe: PCIeLink{Gen: 5, Width: 16, MaxGen: 5, MaxWidth: 16}}
		for l := 0; l < f.cfg.NVLinks; l++ {
			nl := NVLinkInfo{Link: l, Active: true, Version: 4, RemoteType: "switch", RemoteBusID: fmt.Sprintf("0000:ff:%02x.0", l%4)}
			if f.cfg.Mesh && n > 1 {
				per := f.cfg.NVLinks / (n - 1)
				if per == 0 || l >= per*(n-1) {
					break
				}
				peer := l / per
				if peer >= i {
					peer++
				}
				nl.RemoteType, nl.RemoteBusID = "gpu", gpus[peer].addr
			}
			info.NVLinks = append(info.NVLinks, nl)
		}
		f.inv.GPUs = append(f.inv.GPUs, info)
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			anc := "single"
			if gpus[a].numa != gpus[b].numa {
				anc = "system"
			}
			st := "ok"
			p := GPUPair{A: a, B: b, Ancestor: anc, P2P: map[string]string{"read": st, "write": st, "nvlink": "not-supported", "atomics": st}}
			if f.cfg.NVLinks > 0 {
				p.P2P["nvlink"] = "ok"
			}
			f.inv.Pairs = append(f.inv.Pairs, p)
		}
	}
	layer, rate, speedName := "InfiniBand", f.cfg.NICRate, map[int]string{100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR"}[f.cfg.NICRate]
	if f.cfg.Ethernet {
		layer = "Ethernet"
	}
	for i, nic := range nics {
		name := fmt.Sprintf("mlx5_%d", i)
		rel := nic.dir[len("sys/"):]
		link("sys/class/infiniband/"+name, "../../"+rel+"/infiniband/"+name)
		link(nic.dir+"/driver", "../../../../../../bus/pci/drivers/mlx5_core")
		ib := nic.dir + "/infiniband/" + name
		file(ib+"/fw_ver", "28.39.1002\n")
		guid := fmt.Sprintf("b859:9f03:00d4:%04x", 0x1000+i)
		file(ib+"/node_guid", guid+"\n")
		pd := ib + "/ports/1"
		file(pd+"/state", "4: ACTIVE\n")
		file(pd+"/phys_state", "5: LinkUp\n")
		rateText := fmt.Sprintf("%d Gb/sec (4X %s)", rate, speedName)
		if f.cfg.Ethernet {
			rateText = fmt.Sprintf("%d Gb/sec (4X)", rate)
		}
		file(pd+"/rate", rateText+"\n")
		file(pd+"/link_layer", layer+"\n")
		port := HCAPort{Port: 1, State: "Active", PhysState: "LinkUp", LinkLayer: layer, RateGbps: float64(rate), ActiveMTU: 4096}
		if f.cfg.Ethernet {
			file(pd+"/lid", "0x0\n")
			g0 := fmt.Sprintf("fe80:0000:0000:0000:ba59:9fff:fed4:%04x", 0x1000+i)
			g1 := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:0a00:%04x", 0x0100+i)
			file(pd+"/gids/0", g0+"\n")
			file(pd+"/gids/1", g0+"\n")
			file(pd+"/gids/2", g1+"\n")
			file(pd+"/gids/3", g1+"\n")
			file(pd+"/gids/4", "0000:0000:0000:0000:0000:0000:0000:0000\n")
			file(pd+"/gid_attrs/types/0", "IB/RoCE v1\n")
			file(pd+"/gid_attrs/types/1", "RoCE v2\n")
			file(pd+"/gid_attrs/types/2", "IB/RoCE v1\n")
			file(pd+"/gid_attrs/types/3", "RoCE v2\n")
			port.GIDs = []GID{{0, formatGID(g0), ""}, {1, formatGID(g0), ""}, {2, formatGID(g1), ""}, {3, formatGID(g1), ""}}
		} else {
			file(pd+"/lid", fmt.Sprintf("0x%x\n", 1+i))
			g0 := "fe80:0000:0000:0000:" + guid
			file(pd+"/gids/0", g0+"\n")
			file(pd+"/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n")
			port.LID = 1 + i
			port.GIDs = []GID{{0, formatGID(g0), ""}}
		}
		f.hcas = append(f.hcas, HCA{Name: name, NUMA: -1, FirmwareVersion: "28.39.1002", NodeGUID: guid, Ports: []HCAPort{port}})
	}
	file("sys/devices/system/node/online", map[int]string{1: "0\n", 2: "0-1\n"}[ns])
	file("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Fake Xeon\n")
	file("proc/sys/kernel/osrelease", "6.8.0-fake\n")
	file("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fake\n")
	if !f.peerMemOff() {
		file("sys/module/nvidia_peermem/refcnt", "0\n")
	}
	f.files = newMemFS(m)
}

// Hostname returns the configured host name.
func (f *Fake) Hostname() (string, error) { return f.cfg.Hostname, nil }

// Files returns the in-memory /sys and /proc.
func (f *Fake) Files() fs.FS { return f.files }

// Versions returns fixed versions; a missing library leaves its version out.
func (f *Fake) Versions() Versions {
	v := Versions{Driver: "550.90.07", CUDADriver: "12.4", CUDARuntime: "12.4", NCCL: "2.21.5",
		Libraries: map[string]string{"cudart": "libcudart.so.12", "nccl": "libnccl.so.2"}}
	if f.missing("cudart") != nil {
		v.CUDARuntime, v.CUDADriver = "", ""
		delete(v.Libraries, "cudart")
	}
	if f.missing("nccl") != nil {
		v.NCCL = ""
		delete(v.Libraries, "nccl")
	}
	return v
}

// Inventory returns the simulated NVML inventory.
func (f *Fake) Inventory() (*Inventory, error) {
	if err := f.missing("nvml"); err != nil {
		return nil, err
	}
	inv := *f.inv
	return &inv, nil
}

// Runtime returns the simulated CUDA runtime.
func (f *Fake) Runtime() (Runtime, error) {
	if err := f.missing("cudart"); err != nil {
		return nil, err
	}
	return fakeRuntime{f}, nil
}

// Collectives returns the simulated NCCL.
func (f *Fake) Collectives() (Collectives, error) {
	if err := f.missing("nccl"); err != nil {
		return nil, err
	}
	return fakeNCCL{f}, nil
}

// RDMA returns the simulated ibverbs.
func (f *Fake) RDMA() (RDMA, error) {
	if err := f.missing("ibverbs"); err != nil {
		return nil, err
	}
	return fakeRDMA{f}, nil
}

// SeenIDs returns the NCCL unique ids the fake's InitRank was given, in
// call order (for tests of the bootstrap).
func (f *Fake) SeenIDs() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.seenIDs...)
}

type fakeRuntime struct{ f *Fake }

func (r fakeRuntime) Devices() ([]DeviceInfo, error) {
	var out []DeviceInfo
	for i, g := range r.f.inv.GPUs {
		out = append(out, DeviceInfo{Index: i, BusID: g.BusID, ComputeCapability: "9.0", SMs: 132, CopyEngines: 3, MemoryBytes: g.MemoryBytes, FreeBytes: g.MemoryBytes - 1<<30})
	}
	return out, nil
}

func (r fakeRuntime) checkDev(dev int) error {
	if dev < 0 || dev >= len(r.f.inv.GPUs) {
		return fmt.Errorf("fake cuda: invalid device ordinal %d", dev)
	}
	return nil
}

func (r fakeRuntime) Alloc(kind MemKind, dev int, n int64) (Buffer, error) {
	if kind == DeviceMem {
		if err := r.checkDev(dev); err != nil {
			return Buffer{}, err
		}
	} else {
		dev = 0
	}
	if n < 0 {
		return Buffer{}, fmt.Errorf("fake cuda: negative size %d", n)
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	b := Buffer{Kind: kind, Device: dev, Addr: r.f.next, Size: n, NUMA: -1}
	r.f.next += uint64(n+4095)&^4095 + 4096
	r.f.live[b.Addr] = b
	return b, nil
}

func (r fakeRuntime) AllocPinned(n int64, numa int) (Buffer, error) {
	b, err := r.Alloc(PinnedMem, 0, n)
	if err != nil {
		return b, err
	}
	if numa >= 0 && numa < r.f.sockets() {
		b.NUMA = numa
		r.f.mu.Lock()
		r.f.live[b.Addr] = b
		r.f.mu.Unlock()
	}
	return b, nil
}

func (r fakeRuntime) Free(b Buffer) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if _, ok := r.f.live[b.Addr]; !ok {
		return fmt.Errorf("fake cuda: free of unknown buffer %#x", b.Addr)
	}
	delete(r.f.live, b.Addr)
	delete(r.f.data, b.Addr)
	delete(r.f.fresh, b.Addr)
	return nil
}

func (r fakeRuntime) CanAccessPeer(dev, peer int) (bool, error) {
	if err := r.checkDev(dev); err != nil {
		return false, err
	}
	return dev != peer, r.checkDev(peer)
}

func (r fakeRuntime) SetPeerAccess(dev, peer int, on bool) error {
	if err := r.checkDev(dev); err != nil {
		return err
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.peer[[2]int{dev, peer}] = on
	return nil
}

func (f *Fake) peerMemOff() bool { return f.cfg.NoGPUDirect || f.cfg.NoPeerMem }
func (f *Fake) dmaBufOff() bool  { return f.cfg.NoGPUDirect || f.cfg.NoDMABuf }

func (r fakeRuntime) ExportDMABuf(b Buffer) (DMABuf, error) {
	if b.Kind != DeviceMem {
		return DMABuf{}, fmt.Errorf("fake cuda: DMA-BUF export of %s memory", b.Kind)
	}
	if r.f.dmaBufOff() {
		return DMABuf{}, fmt.Errorf("the driver reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0 on GPU %d (fake)", b.Device)
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if _, ok := r.f.live[b.Addr]; !ok {
		return DMABuf{}, fmt.Errorf("fake cuda: cuMemGetHandleForAddressRange: %#x is not an allocation", b.Addr)
	}
	r.f.fds++
	base := b.Addr &^ 4095
	return DMABuf{FD: 100 + r.f.fds, Base: base, Length: (b.Addr+uint64(b.Size)+4095)&^4095 - base, Offset: b.Addr - base}, nil
}

func (r fakeRuntime) CloseDMABuf(d DMABuf) error {
	if d.FD < 100 {
		return fmt.Errorf("fake cuda: close of unknown descriptor %d", d.FD)
	}
	return nil
}

func (r fakeRuntime) NewStream(dev int) (Stream, error) {
	if err := r.checkDev(dev); err != nil {
		return nil, err
	}
	return &fakeStream{f: r.f, dev: dev}, nil
}

// fakeStream keeps a simulated clock: the time its last enqueued work
// ends; every operation advances it.
type fakeStream struct {
	f       *Fake
	dev     int
	t       float64 // seconds
	closed  bool
	held    bool
	pending []<-chan struct{} // collectives not yet complete on every rank
}

type fakeEvent struct {
	dev int
	t   float64
}

func (s *fakeStream) Device() int { return s.dev }

// catchUp charges the host's issue cost and makes new work start no
// earlier than the host's present, unless a spin kernel holds the stream.
func (s *fakeStream) catchUp() {
	s.f.mu.Lock()
	s.f.now += s.f.cfg.IssueCost.Seconds()
	if !s.held {
		s.t = max(s.t, s.f.now)
	}
	s.f.mu.Unlock()
}

func (r fakeRuntime) Hold(st Stream) (func() error, error) {
	s, ok := st.(*fakeStream)
	if !ok {
		return nil, fmt.Errorf("fake cuda: foreign stream")
	}
	if r.f.cfg.NoSpinKernel {
		return nil, fmt.Errorf("fake cuda: cuModuleLoadData: device kernel image is invalid")
	}
	s.catchUp()
	s.held = true
	return func() error {
		// The queued work starts now, back to back: its events keep
		// their spacing.
		s.f.mu.Lock()
		s.held = false
		s.f.now = max(s.f.now, s.t)
		s.f.mu.Unlock()
		return nil
	}, nil
}

// copyCost is the simulated time of a copy of n bytes from src to dst.
func (f *Fake) copyCost(dst, src Buffer, n int64) float64 {
	lat, bw := fakeCopyLatency.Seconds(), fakeH2H
	switch {
	case src.Kind != DeviceMem && dst.Kind == DeviceMem:
		bw = fakeH2DPinned
		if src.Kind == PageableMem {
			bw = fakeH2DPageable
		}
	case src.Kind == DeviceMem && dst.Kind != DeviceMem:
		bw = fakeD2HPinned
		if dst.Kind == PageableMem {
			bw = fakeD2HPageable
		}
	case src.Kind == DeviceMem && dst.Kind == DeviceMem && src.Device == dst.Device:
		bw = fakeD2D
	case src.Kind == DeviceMem && dst.Kind == DeviceMem:
		f.mu.Lock()
		on := f.peer[[2]int{src.Device, dst.Device}] || f.peer[[2]int{dst.Device, src.Device}]
		f.mu.Unlock()
		switch {
		case on && f.cfg.NVLinks > 0:
			bw = fakeP2PNVLink
		case on:
			bw = fakeP2PPCIe
		default:
			bw, lat = fakeP2PStaged, fakeStagedLatency.Seconds()
		}
	}
	if h, d := hostAndDevice(dst, src); h.Kind == PinnedMem && h.NUMA >= 0 && d.Device < len(f.inv.GPUs) && f.inv.GPUs[d.Device].NUMA != h.NUMA {
		bw *= fakeFarNUMA
	}
	return lat + float64(n)/(bw*1e9)
}

// hostAndDevice returns the host and the device side of a host-device copy
// (zero Buffers otherwise).
func hostAndDevice(dst, src Buffer) (host, dev Buffer) {
	switch {
	case src.Kind != DeviceMem && dst.Kind == DeviceMem:
		return src, dst
	case src.Kind == DeviceMem && dst.Kind != DeviceMem:
		return dst, src
	}
	return Buffer{Kind: DeviceMem}, Buffer{}
}

func (s *fakeStream) Copy(dst, src Buffer, n int64) error {
	if s.closed {
		return fmt.Errorf("fake cuda: stream destroyed")
	}
	if n < 0 || n > dst.Size || n > src.Size {
		return fmt.Errorf("fake cuda: copy of %d bytes between buffers of %d and %d bytes", n, src.Size, dst.Size)
	}
	if err := s.waitPending(); err != nil {
		return err
	}
	s.catchUp()
	cost := s.f.copyCost(dst, src, n)
	if h, d := hostAndDevice(dst, src); h.Kind != DeviceMem && d.Device < len(s.f.inv.GPUs) {
		// The GPUs of one socket share its PCIe switch's uplink, one way
		// at a time: a host copy waits for the uplink's earlier copies in
		// its direction (the fake serialises where hardware shares).
		key := [2]int{s.f.inv.GPUs[d.Device].NUMA, boolInt(dst.Kind == DeviceMem)}
		s.f.mu.Lock()
		s.t = max(s.t, s.f.uplink[key])
		s.t += cost
		s.f.uplink[key] = s.t
		s.f.mu.Unlock()
	} else {
		s.t += cost
	}
	s.f.moveData(dst, src, n)
	return nil
}

func (s *fakeStream) Record() (Event, error) {
	s.catchUp()
	return &fakeEvent{dev: s.dev, t: s.t}, nil
}

func (s *fakeStream) Wait(e Event) error {
	fe, ok := e.(*fakeEvent)
	if !ok {
		return fmt.Errorf("fake cuda: foreign event")
	}
	s.catchUp()
	s.t = max(s.t, fe.t)
	return nil
}

func (s *fakeStream) Sync() error {
	if err := s.waitPending(); err != nil {
		return err
	}
	s.f.mu.Lock()
	s.f.now = max(s.f.now, s.t)
	s.f.mu.Unlock()
	return nil
}

func (s *fakeStream) Close() error {
	s.closed = true
	return nil
}

func (e *fakeEvent) Since(start Event) (time.Duration, error) {
	fs, ok := start.(*fakeEvent)
	if !ok || fs.dev != e.dev {
		return 0, fmt.Errorf("fake cuda: events of different devices")
	}
	return time.Duration((e.t - fs.t) * 1e9), nil
}

func (e *fakeEvent) Close() error { return nil }

type fakeNCCL struct{ f *Fake }

type fakeComm struct {
	f            *Fake
	rank, nranks int
	dev          int
	w            *fakeCommWorld
	seq          int // launches posted
}

func (c fakeNCCL) InitAll(devs []int) ([]Comm, error) {
	var out []Comm
	ranks := make([]int, len(devs))
	for i := range ranks {
		ranks[i] = i
	}
	if err := c.f.debugLines(ranks, len(devs)); err != nil {
		return nil, err
	}
	w := newCommWorld(len(devs))
	for i, d := range devs {
		if err := (fakeRuntime{c.f}).checkDev(d); err != nil {
			return nil, err
		}
		out = append(out, &fakeComm{f: c.f, rank: i, nranks: len(devs), dev: d, w: w})
	}
	return out, nil
}

func (c fakeNCCL) UniqueID() ([]byte, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.ids++
	return []byte(fmt.Sprintf("fake-nccl-id/%s/%d", c.f.cfg.Hostname, c.f.ids)), nil
}

func (c fakeNCCL) InitRank(id []byte, nranks, rank, dev int) (Comm, error) {
	if len(id) == 0 || string(id[:min(len(id), 13)]) != "fake-nccl-id/" {
		return nil, fmt.Errorf("fake nccl: invalid unique id %q", id)
	}
	if rank < 0 || rank >= nranks {
		return nil, fmt.Errorf("fake nccl: rank %d of %d", rank, nranks)
	}
	if err := (fakeRuntime{c.f}).checkDev(dev); err != nil {
		return nil, err
	}
	c.f.mu.Lock()
	c.f.seenIDs = append(c.f.seenIDs, append([]byte(nil), id...))
	c.f.mu.Unlock()
	if err := c.f.debugLines([]int{rank}, nranks); err != nil {
		return nil, err
	}
	w := &fakeCommWorld{nranks: nranks, detached: true}
	if c.f.cfg.World != nil {
		w = c.f.cfg.World.comm(string(id), nranks)
	}
	return &fakeComm{f: c.f, rank: rank, nranks: nranks, dev: dev, w: w}, nil
}

func (c fakeNCCL) Group(fn func() error) error { return fn() }

func (c fakeNCCL) CaptureDebug(path string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.debugPath = path
	return nil
}

// debugLines writes what NCCL_DEBUG=INFO prints at communicator creation
// on this fake (in NCCL's wording; nvls.cc, transport setup, NET/IB init)
// to the capture file, if one was set.
func (f *Fake) debugLines(ranks []int, nranks int) error {
	f.mu.Lock()
	path := f.debugPath
	f.mu.Unlock()
	if path == "" {
		return nil
	}
	var b strings.Builder
	pre := func(rank int) string { return fmt.Sprintf("%s:4242:4242 [%d] NCCL INFO ", f.cfg.Hostname, rank) }
	for _, r := range ranks {
		fmt.Fprintf(&b, "%sNCCL version 2.21.5+cuda12.4\n", pre(r))
		if f.cfg.NICs > 0 {
			fmt.Fprintf(&b, "%sNET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n", pre(r))
		}
		avail := "not "
		if f.cfg.NVLinks > 0 && !f.cfg.Mesh {
			avail = ""
		}
		fmt.Fprintf(&b, "%sNVLS multicast support is %savailable on dev %d\n", pre(r), avail, r%max(len(f.inv.GPUs), 1))
		fmt.Fprintf(&b, "%scomm 0x7f00 rank %d nRanks %d nNodes 1 localRanks %d localRank %d MNNVL 0\n", pre(r), r, nranks, nranks, r)
		if nranks > 1 {
			via := "P2P/CUMEM/read"
			if f.cfg.NVLinks == 0 {
				via = "SHM/direct/direct"
			}
			fmt.Fprintf(&b, "%sChannel 00/0 : %d[%d] -> %d[%d] via %s\n", pre(r), r, r, (r+1)%nranks, (r+1)%nranks, via)
		}
		fmt.Fprintf(&b, "%sConnected all rings\n", pre(r))
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("fake nccl: NCCL_DEBUG_FILE %s: %w", path, err)
	}
	_, err = fh.WriteString(b.String())
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *fakeComm) Launch(op model.Collective, send, recv Buffer, count int64, s Stream) error {
	fs, ok := s.(*fakeStream)
	if !ok || fs.dev != c.dev {
		return fmt.Errorf("fake nccl: stream of another device")
	}
	if send.Kind != DeviceMem || recv.Kind != DeviceMem || send.Device != c.dev || recv.Device != c.dev {
		return fmt.Errorf("fake nccl: buffers must be on GPU %d", c.dev)
	}
	if c.f.cfg.FailCollective == op.String() {
		return fmt.Errorf("fake nccl: nccl%s: unhandled system error (ncclResult 2)", op)
	}
	per := count * ncclElemSize
	total := per * int64(c.nranks)
	var sendNeed, recvNeed, size int64
	switch op {
	case model.AllReduce, model.Broadcast, model.Reduce, model.SendRecv:
		sendNeed, recvNeed, size = per, per, per
	case model.AllGather:
		sendNeed, recvNeed, size = per, total, total
	case model.ReduceScatter:
		sendNeed, recvNeed, size = total, per, total
	case model.AlltoAll:
		sendNeed, recvNeed, size = total, total, total
	default:
		return fmt.Errorf("fake nccl: %s not supported", op)
	}
	if send.Size < sendNeed || recv.Size < recvNeed {
		return fmt.Errorf("fake nccl: %s of %d elements needs %d/%d bytes, got %d/%d", op, count, sendNeed, recvNeed, send.Size, recv.Size)
	}
	c.seq++
	done, err := c.w.post(c.seq, fakeLaunch{f: c.f, rank: c.rank, op: op, count: count, send: send, recv: recv})
	if err != nil {
		return err
	}
	fs.pending = append(fs.pending, done)
	if count == 0 {
		// NCCL returns at once for zero elements, enqueuing nothing.
		return nil
	}
	t := fakeNCCLLatency.Seconds()
	if f := op.BusBWFactor(c.nranks); f > 0 {
		t += float64(size) * f / (fakeNCCLBusBW * 1e9)
	}
	fs.catchUp()
	fs.t += t
	return nil
}

func (c *fakeComm) Close() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.destroyed++
	return nil
}

func (c *fakeComm) Abort() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.aborted++
	return nil
}

// CommEnds returns how many communicators were destroyed
// (ncclCommDestroy) and aborted (ncclCommAbort).
func (f *Fake) CommEnds() (destroyed, aborted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.destroyed, f.aborted
}

type fakeRDMA struct{ f *Fake }

func (r fakeRDMA) HCAs() ([]HCA, error) { return append([]HCA(nil), r.f.hcas...), nil }

func (r fakeRDMA) Loopback(dev string, rt Route) (Loopback, error) {
	for _, h := range r.f.hcas {
		if h.Name != dev {
			continue
		}
		for _, p := range h.Ports {
			if p.Port != rt.Port {
				continue
			}
			switch {
			case p.LinkLayer == "InfiniBand" && rt.LID != p.LID:
				return nil, fmt.Errorf("fake verbs: %s port %d: LID %d, route says %d", dev, p.Port, p.LID, rt.LID)
			case p.LinkLayer == "Ethernet" && rt.GIDIndex < 0:
				return nil, fmt.Errorf("fake verbs: %s port %d: RoCE needs a GID", dev, p.Port)
			}
			return &fakeLoopback{f: r.f, gbps: p.RateGbps / 8}, nil
		}
	}
	return nil, fmt.Errorf("fake verbs: no RDMA device %q port %d", dev, rt.Port)
}

type fakeLoopback struct {
	f    *Fake
	gbps float64
}

type fakeRegion struct {
	b   Buffer
	via string // "host", "peermem" or "dmabuf"
}

func (fakeRegion) Close() error { return nil }

func (l *fakeLoopback) Register(b Buffer) (Region, error) {
	if b.Kind == DeviceMem {
		if l.f.peerMemOff() {
			return nil, fmt.Errorf("verbs: ibv_reg_mr: %d bytes at %#x: ibv_reg_mr: Bad address", b.Size, b.Addr)
		}
		return fakeRegion{b, "peermem"}, nil
	}
	return fakeRegion{b, "host"}, nil
}

func (l *fakeLoopback) RegisterDMABuf(b Buffer, d DMABuf) (Region, error) {
	if b.Kind != DeviceMem || d.FD < 100 || d.Base+d.Offset != b.Addr || d.Offset+uint64(b.Size) > d.Length {
		return nil, fmt.Errorf("verbs: ibv_reg_dmabuf_mr: %d bytes at offset %d of fd %d: Invalid argument", b.Size, d.Offset, d.FD)
	}
	return fakeRegion{b, "dmabuf"}, nil
}

func (l *fakeLoopback) rates(src, dst Region) (bw float64, lat time.Duration) {
	bw, lat = l.gbps*fakeRDMAEff, fakeRDMALatency
	if src.(fakeRegion).b.Kind == DeviceMem || dst.(fakeRegion).b.Kind == DeviceMem {
		bw, lat = l.gbps*fakeRDMAGPUEff, fakeRDMAGPULat
	}
	return bw, lat
}

func (l *fakeLoopback) WriteBandwidth(src, dst Region, size int64, iters, depth int) (time.Duration, error) {
	bw, lat := l.rates(src, dst)
	return lat + time.Duration(float64(size)*float64(iters)/(bw*1e9)*1e9), nil
}

func (l *fakeLoopback) WriteLatency(src, dst Region, size int64, iters int) (time.Duration, error) {
	bw, lat := l.rates(src, dst)
	return time.Duration(iters) * (lat + time.Duration(float64(size)/(bw*1e9)*1e9)), nil
}

func (l *fakeLoopback) Close() error { return nil }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r fakeRDMA) Endpoint(dev string, port, qps int) (Endpoint, error) {
	for _, h := range r.f.hcas {
		if h.Name != dev {
			continue
		}
		for _, p := range h.Ports {
			if p.Port == port {
				if qps < 1 || qps > 16 {
					return nil, fmt.Errorf("fake verbs: %d queue pairs", qps)
				}
				r.f.mu.Lock()
				base := uint32(0x100 + 0x40*r.f.ids)
				r.f.ids++
				r.f.mu.Unlock()
				e := &fakeEndpoint{f: r.f, gbps: p.RateGbps / 8, connected: make([]bool, qps)}
				for i := 0; i < qps; i++ {
					e.qpns = append(e.qpns, base+uint32(i))
				}
				return e, nil
			}
		}
	}
	return nil, fmt.Errorf("fake verbs: no RDMA device %q port %d", dev, port)
}

// fakeEndpoint times writes across the fabric like the loopback, at the
// port rate, with the fabric's latency added (the fake's figure).
type fakeEndpoint struct {
	f         *Fake
	gbps      float64
	qpns      []uint32
	connected []bool
}

// fakeFabricLatency is the fake's one-way switch and wire time.
const fakeFabricLatency = 1500 * time.Nanosecond

func (e *fakeEndpoint) QPNs() []uint32 { return e.qpns }

func (e *fakeEndpoint) Connect(i int, remoteQPN uint32, rt Route) error {
	if i < 0 || i >= len(e.qpns) || remoteQPN == 0 || (rt.LID == 0 && rt.GIDIndex < 0) {
		return fmt.Errorf("fake verbs: ibv_modify_qp(RTR): QP %d to %d: Invalid argument", i, remoteQPN)
	}
	e.connected[i] = true
	return nil
}

func (e *fakeEndpoint) lb() *fakeLoopback { return &fakeLoopback{f: e.f, gbps: e.gbps} }

func (e *fakeEndpoint) Register(b Buffer) (Region, error) { return e.lb().Register(b) }
func (e *fakeEndpoint) RegisterDMABuf(b Buffer, d DMABuf) (Region, error) {
	return e.lb().RegisterDMABuf(b, d)
}

func (e *fakeEndpoint) Remote(r Region) RemoteRegion {
	fr := r.(fakeRegion)
	return RemoteRegion{Addr: fr.b.Addr, RKey: uint32(fr.b.Addr >> 12), Size: fr.b.Size}
}

func (e *fakeEndpoint) ready(dst RemoteRegion, size int64) error {
	for i, c := range e.connected {
		if !c {
			return fmt.Errorf("fake verbs: QP %d is not connected", i)
		}
	}
	if dst.RKey == 0 || size > dst.Size {
		return fmt.Errorf("fake verbs: RDMA WRITE completion status 10 (remote access error)")
	}
	return nil
}

func (e *fakeEndpoint) WriteBandwidth(src Region, dst RemoteRegion, size int64, iters, depth int) (time.Duration, error) {
	if err := e.ready(dst, size); err != nil {
		return 0, err
	}
	d, err := e.lb().WriteBandwidth(src, src, size, iters, depth)
	return d + 2*fakeFabricLatency, err
}

func (e *fakeEndpoint) WriteLatency(src Region, dst RemoteRegion, size int64, iters int) (time.Duration, error) {
	if err := e.ready(dst, size); err != nil {
		return 0, err
	}
	d, err := e.lb().WriteLatency(src, src, size, iters)
	return d + time.Duration(iters)*2*fakeFabricLatency, err
}

func (e *fakeEndpoint) Close() error { return nil }
