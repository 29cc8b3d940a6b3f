package hwbench

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collsim/collsim/hwbench/internal/dl"
	"github.com/collsim/collsim/model"
)

// ErrLibraryNotFound is wrapped by every error that comes from a vendor
// library (libcudart, libnccl, libibverbs, libnvidia-ml) being absent. The
// error text names the sonames tried and carries the dynamic loader's
// message.
var ErrLibraryNotFound = dl.ErrLibraryNotFound

// ErrUnsupported is wrapped by every error of a collsim built without cgo
// or for a system other than Linux, where no vendor library can be loaded.
// It is errors.ErrUnsupported.
var ErrUnsupported = dl.ErrUnsupported

// unavailable reports whether err means "this library or build cannot do
// it here" rather than "the measurement failed": such a probe is skipped,
// not failed.
func unavailable(err error) bool {
	return errors.Is(err, ErrLibraryNotFound) || errors.Is(err, ErrUnsupported)
}

// Backend is the machine the probes measure. The native backend (Open)
// loads the vendor libraries; Fake simulates a machine for tests. Each
// accessor is called when a probe first needs it; an accessor whose library
// is missing returns an error wrapping ErrLibraryNotFound and the probes
// that need it are skipped.
type Backend interface {
	// Hostname is the machine's name as records show it.
	Hostname() (string, error)
	// Files is the root file system ("sys/bus/pci/...", "proc/cpuinfo"),
	// read for the PCI tree, RDMA devices and CPU vendor; nil when there is
	// none.
	Files() fs.FS
	// Versions returns the software versions the backend can tell.
	Versions() Versions
	// Inventory is what NVML reports about the GPUs.
	Inventory() (*Inventory, error)
	// Runtime is the CUDA runtime.
	Runtime() (Runtime, error)
	// Collectives is NCCL.
	Collectives() (Collectives, error)
	// RDMA is ibverbs.
	RDMA() (RDMA, error)
}

// Versions are the software versions a record carries; empty when unknown.
type Versions struct {
	// Driver is the NVIDIA driver ("550.90.07").
	Driver string `json:"driver,omitempty"`
	// CUDADriver is the CUDA version the driver supports ("12.4").
	CUDADriver string `json:"cuda_driver,omitempty"`
	// CUDARuntime is the loaded CUDA runtime's version ("12.4").
	CUDARuntime string `json:"cuda_runtime,omitempty"`
	// NCCL is the loaded NCCL's version ("2.21.5").
	NCCL string `json:"nccl,omitempty"`
	// Libraries are the sonames that were loaded, by role
	// ("cudart": "libcudart.so.12").
	Libraries map[string]string `json:"libraries,omitempty"`
}

// MemKind says where a buffer lives.
type MemKind uint8

// Memory kinds.
const (
	// DeviceMem is GPU memory (cudaMalloc).
	DeviceMem MemKind = iota
	// PinnedMem is page-locked host memory (cudaMallocHost).
	PinnedMem
	// PageableMem is ordinary host memory.
	PageableMem
)

// String returns "device", "pinned" or "pageable".
func (k MemKind) String() string {
	switch k {
	case DeviceMem:
		return "device"
	case PinnedMem:
		return "pinned"
	case PageableMem:
		return "pageable"
	}
	return fmt.Sprintf("memkind(%d)", uint8(k))
}

// Buffer is memory a Runtime allocated: Size bytes at Addr, on GPU Device
// when Kind is DeviceMem. It is a plain value; Free it through the Runtime
// that allocated it.
type Buffer struct {
	Kind   MemKind
	Device int
	Addr   uint64
	Size   int64
	// NUMA is the node pinned host memory was bound to (AllocPinned); -1
	// when it was not bound (then the kernel placed it).
	NUMA int
}

// Slice returns the n bytes of b that start at offset off. It panics when
// the range lies outside b (a caller bug).
func (b Buffer) Slice(off, n int64) Buffer {
	if off < 0 || n < 0 || off+n > b.Size {
		panic(fmt.Sprintf("hwbench: slice [%d,%d) of a %d-byte buffer", off, off+n, b.Size))
	}
	b.Addr += uint64(off)
	b.Size = n
	return b
}

// DeviceInfo is what the CUDA runtime reports about one GPU.
type DeviceInfo struct {
	// Index is the CUDA device ordinal.
	Index int `json:"index"`
	// BusID is the PCI address in sysfs form ("0000:18:00.0").
	BusID string `json:"bus_id"`
	// ComputeCapability is "major.minor" ("9.0").
	ComputeCapability string `json:"compute_capability,omitempty"`
	SMs               int    `json:"sms,omitempty"`
	CopyEngines       int    `json:"copy_engines,omitempty"`
	// MemoryBytes and FreeBytes are the device memory at probe time, as
	// NVML reports it (0 without NVML).
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	FreeBytes   uint64 `json:"free_bytes,omitempty"`
}

// Runtime is the part of the CUDA runtime the copy, p2p, nccl and gdr
// probes use.
type Runtime interface {
	// Devices lists the visible GPUs in CUDA ordinal order.
	Devices() ([]DeviceInfo, error)
	// Alloc allocates n zeroed bytes of kind (on GPU dev for DeviceMem).
	Alloc(kind MemKind, dev int, n int64) (Buffer, error)
	// AllocPinned allocates n bytes of pinned host memory bound to NUMA
	// node numa (numa < 0: unbound). The buffer's NUMA is the node, or -1
	// when the kernel refused the binding.
	AllocPinned(n int64, numa int) (Buffer, error)
	// HostBytes returns host buffer b's memory (pinned or pageable) for
	// the host to read and write.
	HostBytes(b Buffer) ([]byte, error)
	// Free releases a buffer Alloc returned.
	Free(b Buffer) error
	// CanAccessPeer reports whether dev can map peer's memory.
	CanAccessPeer(dev, peer int) (bool, error)
	// SetPeerAccess turns dev's direct access to peer on or off.
	SetPeerAccess(dev, peer int, on bool) error
	// NewStream creates a stream on GPU dev.
	NewStream(dev int) (Stream, error)
	// ExportDMABuf exports device buffer b as a DMA-BUF file descriptor
	// (cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD),
	// the range widened to page boundaries as NCCL does. Close it with
	// CloseDMABuf.
	ExportDMABuf(b Buffer) (DMABuf, error)
	// CloseDMABuf closes a descriptor ExportDMABuf returned.
	CloseDMABuf(d DMABuf) error
	// Hold queues a spin kernel on s that keeps the stream from starting
	// the work queued after it until release is called (CUDA's
	// p2pBandwidthLatencyTest method), so that work runs back to back,
	// not as fast as the host issues it. release returns at once without
	// waiting for the stream, so several held streams released one after
	// another start together; the stream's Sync or Close ends the hold.
	Hold(s Stream) (release func() error, err error)
}

// DMABuf is GPU memory exported as a DMA-BUF: descriptor FD covers Length
// bytes from virtual address Base; the buffer it was made for starts
// Offset bytes in.
type DMABuf struct {
	FD     int
	Base   uint64
	Length uint64
	Offset uint64
}

// Stream is an ordered queue of GPU work on one device.
type Stream interface {
	// Device is the GPU the stream belongs to.
	Device() int
	// Copy enqueues a copy of n bytes from src to dst (host or device, any
	// device: a copy between two GPUs is a peer copy).
	Copy(dst, src Buffer, n int64) error
	// Record enqueues a timing event.
	Record() (Event, error)
	// Wait makes later work on the stream wait for e (of any stream).
	Wait(e Event) error
	// Sync blocks until all work enqueued so far is done.
	Sync() error
	// Close destroys the stream.
	Close() error
}

// Event is a point in a stream's work, for timing.
type Event interface {
	// Since returns the GPU time from start to this event; both must be
	// complete and belong to the same device.
	Since(start Event) (time.Duration, error)
	// Close destroys the event.
	Close() error
}

// Collectives is the part of NCCL the nccl probe uses. Elements are
// float32 and reductions sum, as in nccl-tests' defaults.
type Collectives interface {
	// InitAll creates one communicator per device of devs in this process
	// (ncclCommInitAll); rank i runs on devs[i].
	InitAll(devs []int) ([]Comm, error)
	// UniqueID creates the id rank 0 hands to the other ranks.
	UniqueID() ([]byte, error)
	// InitRank joins rank of an nranks communicator on GPU dev. It blocks
	// until every rank has joined.
	InitRank(id []byte, nranks, rank, dev int) (Comm, error)
	// Group runs fn between ncclGroupStart and ncclGroupEnd on one OS
	// thread; the launches fn makes are issued together.
	Group(fn func() error) error
	// CaptureDebug makes NCCL write its NCCL_DEBUG=INFO lines to path
	// (NCCL_DEBUG, NCCL_DEBUG_FILE); it must come before the first
	// communicator, when NCCL reads its environment.
	CaptureDebug(path string) error
}

// Comm is one rank of a communicator.
type Comm interface {
	// Launch enqueues op on s with count elements as NCCL counts them (per
	// rank for AllGather and ReduceScatter, total otherwise). Broadcast
	// uses root 0.
	Launch(op model.Collective, send, recv Buffer, count int64, s Stream) error
	// Close destroys the communicator after its work (ncclCommDestroy).
	Close() error
	// Abort frees the communicator without waiting for outstanding work
	// (ncclCommAbort): after a failed collective, ncclCommDestroy may
	// block on work that never finishes.
	Abort() error
}

// RDMA is the part of ibverbs the gdr probe and topology use.
type RDMA interface {
	// HCAs lists the RDMA devices with their ports and GIDs.
	HCAs() ([]HCA, error)
	// Loopback opens device dev and connects two queue pairs on one port
	// to each other as r says.
	Loopback(dev string, r Route) (Loopback, error)
	// Endpoint opens device dev and creates qps queue pairs on port, to
	// be connected to another node's endpoint.
	Endpoint(dev string, port, qps int) (Endpoint, error)
}

// EndpointInfo is what the peer needs to connect to an endpoint: the
// port's address (LID on InfiniBand, GID on RoCE), its queue pair numbers,
// its MTU and rate.
type EndpointInfo struct {
	Host     string   `json:"host"`
	HCA      string   `json:"hca"`
	Port     int      `json:"port"`
	LID      int      `json:"lid,omitempty"`
	GID      string   `json:"gid,omitempty"`
	GIDIndex int      `json:"gid_index"`
	QPNs     []uint32 `json:"qpns"`
	MTU      int      `json:"mtu"`
	RateGbps float64  `json:"rate_gbps"`
}

// RemoteRegion is a registered region as the peer addresses it.
type RemoteRegion struct {
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
	Size int64  `json:"size"`
}

// Endpoint is queue pairs of this node connected to another node's, for
// RDMA WRITEs across the fabric.
type Endpoint interface {
	// QPNs are the endpoint's queue pair numbers.
	QPNs() []uint32
	// Connect connects queue pair i to the peer's queue pair remoteQPN
	// through r (this port, the peer's LID or GID, the MTU).
	Connect(i int, remoteQPN uint32, r Route) error
	// Register and RegisterDMABuf register memory as Loopback's do.
	Register(b Buffer) (Region, error)
	RegisterDMABuf(b Buffer, d DMABuf) (Region, error)
	// Remote describes a region for the peer.
	Remote(r Region) RemoteRegion
	// WriteBandwidth writes size bytes from src into the peer's region
	// iters times with depth writes in flight over every queue pair.
	WriteBandwidth(src Region, dst RemoteRegion, size int64, iters, depth int) (time.Duration, error)
	// WriteLatency writes size bytes iters times one at a time, each
	// waiting for its completion (the peer's acknowledgement).
	WriteLatency(src Region, dst RemoteRegion, size int64, iters int) (time.Duration, error)
	Close() error
}

// Route is how the two loopback queue pairs address each other: by LID on
// InfiniBand, by GID (GIDIndex >= 0) on RoCE.
type Route struct {
	Port     int
	LID      int
	GIDIndex int
	GID      string
	// MTU is the path MTU in bytes.
	MTU int
}

// Loopback is two connected RC queue pairs on one port.
type Loopback interface {
	// Register registers a buffer (host memory, or GPU memory when
	// nvidia-peermem makes GPUDirect RDMA work) for RDMA with ibv_reg_mr.
	Register(b Buffer) (Region, error)
	// RegisterDMABuf registers GPU buffer b through its DMA-BUF export d
	// with ibv_reg_dmabuf_mr (iova b's address), the path NCCL takes when
	// the kernel, driver and rdma-core support it.
	RegisterDMABuf(b Buffer, d DMABuf) (Region, error)
	// WriteBandwidth RDMA-writes size bytes from src to dst iters times
	// with depth writes in flight and returns the elapsed host time.
	WriteBandwidth(src, dst Region, size int64, iters, depth int) (time.Duration, error)
	// WriteLatency writes size bytes iters times, one at a time, waiting
	// for each completion, and returns the total host time.
	WriteLatency(src, dst Region, size int64, iters int) (time.Duration, error)
	// Close destroys the queue pairs.
	Close() error
}

// Region is a registered memory region.
type Region interface {
	Close() error
}

// Inventory is what NVML reports about the GPUs of this machine.
type Inventory struct {
	Driver     string    `json:"driver,omitempty"`
	CUDADriver string    `json:"cuda_driver,omitempty"`
	NVML       string    `json:"nvml,omitempty"`
	GPUs       []GPUInfo `json:"gpus"`
	Pairs      []GPUPair `json:"pairs,omitempty"`
}

// GPUInfo is one GPU as NVML reports it.
type GPUInfo struct {
	// Index is NVML's index (PCI bus order).
	Index int    `json:"index"`
	Name  string `json:"name"`
	UUID  string `json:"uuid,omitempty"`
	// BusID is the PCI address in sysfs form ("0000:18:00.0").
	BusID             string `json:"bus_id"`
	MemoryBytes       uint64 `json:"memory_bytes,omitempty"`
	FreeBytes         uint64 `json:"free_bytes,omitempty"`
	NUMA              int    `json:"numa"`
	ComputeCapability string `json:"compute_capability,omitempty"`
	// PCIe is the GPU's own link, current and maximum; the current
	// generation drops when the GPU idles.
	PCIe    PCIeLink     `json:"pcie"`
	NVLinks []NVLinkInfo `json:"nvlinks,omitempty"`
}

// PCIeLink is a PCIe link's generation and width.
type PCIeLink struct {
	Gen      int `json:"gen,omitempty"`
	Width    int `json:"width,omitempty"`
	MaxGen   int `json:"max_gen,omitempty"`
	MaxWidth int `json:"max_width,omitempty"`
}

// NVLinkInfo is one NVLink of a GPU.
type NVLinkInfo struct {
	Link        int    `json:"link"`
	Active      bool   `json:"active"`
	Version     int    `json:"version,omitempty"`
	RemoteBusID string `json:"remote_bus_id,omitempty"`
	// RemoteType is "gpu", "switch", "ibmnpu" or "unknown".
	RemoteType string `json:"remote_type,omitempty"`
}

// GPUPair is what NVML says about two GPUs (A < B, NVML indices).
type GPUPair struct {
	A int `json:"a"`
	B int `json:"b"`
	// Ancestor is the topology common ancestor ("single", "multiple",
	// "hostbridge", "node", "system").
	Ancestor string `json:"ancestor,omitempty"`
	// P2P maps "read", "write", "nvlink", "atomics" to a status ("ok", ...).
	P2P map[string]string `json:"p2p,omitempty"`
}

// HCA is one RDMA device.
type HCA struct {
	Name            string    `json:"name"`
	BusID           string    `json:"bus_id,omitempty"`
	Driver          string    `json:"driver,omitempty"`
	NUMA            int       `json:"numa"`
	FirmwareVersion string    `json:"fw_version,omitempty"`
	NodeGUID        string    `json:"node_guid,omitempty"`
	Ports           []HCAPort `json:"ports"`
}

// HCAPort is one port of an RDMA device, in ibstat's words.
type HCAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	PhysState string `json:"phys_state,omitempty"`
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string  `json:"link_layer"`
	RateGbps  float64 `json:"rate_gbps"`
	// Rate is sysfs's rate text ("400 Gb/sec (4X NDR)").
	Rate      string `json:"rate,omitempty"`
	ActiveMTU int    `json:"active_mtu,omitempty"`
	LID       int    `json:"lid,omitempty"`
	GIDs      []GID  `json:"gids,omitempty"`
}

// GID is one non-zero GID table entry.
type GID struct {
	Index int    `json:"index"`
	GID   string `json:"gid"`
	// Type is "IB/RoCE v1" or "RoCE v2" (sysfs gid_attrs), "" if unknown.
	Type string `json:"type,omitempty"`
}
