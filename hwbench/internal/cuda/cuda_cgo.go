//go:build cgo && linux

package cuda

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// Function pointers into libcudart. cudaError_t and the enums are ints;
// streams and events are opaque pointers.
typedef struct {
	int (*getDeviceCount)(int *);
	int (*setDevice)(int);
	int (*deviceGetAttribute)(int *, int, int);
	int (*deviceGetPCIBusId)(char *, int, int);
	int (*deviceCanAccessPeer)(int *, int, int);
	int (*deviceEnablePeerAccess)(int, unsigned int);
	int (*deviceDisablePeerAccess)(int);
	int (*deviceSynchronize)(void);
	int (*memGetInfo)(size_t *, size_t *);
	int (*malloc_)(void **, size_t);
	int (*free_)(void *);
	int (*mallocHost)(void **, size_t);
	int (*freeHost)(void *);
	int (*memset_)(void *, int, size_t);
	int (*memcpy_)(void *, const void *, size_t, int);
	int (*memcpyAsync)(void *, const void *, size_t, int, void *);
	int (*memcpyPeerAsync)(void *, int, const void *, int, size_t, void *);
	int (*streamCreateWithFlags)(void **, unsigned int);
	int (*streamDestroy)(void *);
	int (*streamSynchronize)(void *);
	int (*streamWaitEvent)(void *, void *, unsigned int);
	int (*eventCreateWithFlags)(void **, unsigned int);
	int (*eventRecord)(void *, void *);
	int (*eventSynchronize)(void *);
	int (*eventElapsedTime)(float *, void *, void *);
	int (*eventDestroy)(void *);
	int (*driverGetVersion)(int *);
	int (*runtimeGetVersion)(int *);
	int (*getLastError)(void);
	const char *(*getErrorString)(int);
	const char *(*getErrorName)(int);
	int (*hostAlloc)(void **, size_t, unsigned int);
	int (*hostGetDevicePointer)(void **, void *, unsigned int);
} hb_cuda;

// Function pointers into libcuda (the driver API): the DMA-BUF export and
// the module and launch calls the spin kernel needs. CUresult, CUdevice and
// the enums are ints; CUdeviceptr is an unsigned 64-bit integer; modules,
// functions and streams are opaque pointers. A NULL entry was not found.
typedef struct {
	int (*init)(unsigned int);
	int (*deviceGet)(int *, int);
	int (*deviceGetAttribute)(int *, int, int);
	int (*getErrorString)(int, const char **);
	int (*memGetHandleForAddressRange)(void *, unsigned long long, size_t, int, unsigned long long);
	int (*moduleLoadData)(void **, const void *);
	int (*moduleGetFunction)(void **, void *, const char *);
	int (*launchKernel)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
	                    unsigned int, void *, void **, void **);
} hb_cu;

#define P(x) ((void *)(uintptr_t)(x))

static int hb_get_device_count(hb_cuda *f, int *n) { return f->getDeviceCount(n); }
static int hb_driver_version(hb_cuda *f, int *v) { return f->driverGetVersion(v); }
static int hb_runtime_version(hb_cuda *f, int *v) { return f->runtimeGetVersion(v); }
static int hb_last_error(hb_cuda *f) { return f->getLastError(); }
static const char *hb_error_string(hb_cuda *f, int e) { return f->getErrorString(e); }
static const char *hb_error_name(hb_cuda *f, int e) { return f->getErrorName(e); }
static int hb_set_device(hb_cuda *f, int dev) { return f->setDevice(dev); }

static int hb_attribute(hb_cuda *f, int *v, int attr, int dev) { return f->deviceGetAttribute(v, attr, dev); }
static int hb_pci_bus_id(hb_cuda *f, char *buf, int n, int dev) { return f->deviceGetPCIBusId(buf, n, dev); }
static int hb_can_access_peer(hb_cuda *f, int *v, int dev, int peer) { return f->deviceCanAccessPeer(v, dev, peer); }

// The following select dev and then act on it within one C call, so the
// selection and the call happen on the same OS thread.
static int hb_mem_info(hb_cuda *f, int dev, size_t *fr, size_t *tot) {
	int e = f->setDevice(dev); if (e) return e;
	return f->memGetInfo(fr, tot);
}
static int hb_enable_peer(hb_cuda *f, int dev, int peer) {
	int e = f->setDevice(dev); if (e) return e;
	return f->deviceEnablePeerAccess(peer, 0);
}
static int hb_disable_peer(hb_cuda *f, int dev, int peer) {
	int e = f->setDevice(dev); if (e) return e;
	return f->deviceDisablePeerAccess(peer);
}
static int hb_device_sync(hb_cuda *f, int dev) {
	int e = f->setDevice(dev); if (e) return e;
	return f->deviceSynchronize();
}
static int hb_malloc(hb_cuda *f, int dev, uintptr_t *p, size_t n) {
	int e = f->setDevice(dev); if (e) return e;
	void *q = NULL; e = f->malloc_(&q, n); *p = (uintptr_t)q; return e;
}
static int hb_free(hb_cuda *f, int dev, uintptr_t p) {
	int e = f->setDevice(dev); if (e) return e;
	return f->free_(P(p));
}
// cudaMemset runs on the legacy default stream, which does not order with
// the non-blocking streams the probes use, and may return before it is
// done: wait for the device before any stream touches the memory.
static int hb_memset(hb_cuda *f, int dev, uintptr_t p, int v, size_t n) {
	int e = f->setDevice(dev); if (e) return e;
	e = f->memset_(P(p), v, n); if (e) return e;
	return f->deviceSynchronize();
}
static int hb_malloc_host(hb_cuda *f, uintptr_t *p, size_t n) {
	void *q = NULL; int e = f->mallocHost(&q, n); *p = (uintptr_t)q; return e;
}
static int hb_free_host(hb_cuda *f, uintptr_t p) { return f->freeHost(P(p)); }

// hb_malloc_host_numa allocates pinned host memory whose pages come from
// NUMA node numa: the calling thread's memory policy is set to that node
// (set_mempolicy MPOL_BIND) around cudaHostAlloc, which faults and pins the
// pages, and reset to the default afterwards, all in this one call on one
// thread. numa < 0 allocates without a policy. *bound is 1 when the policy
// took, 0 when the kernel refused it (then the memory is wherever it fell).
static int hb_malloc_host_numa(hb_cuda *f, uintptr_t *p, size_t n, int numa, int *bound) {
	*bound = 0;
	unsigned long mask[16];
	if (numa >= 0 && numa < (int)(sizeof mask * 8)) {
		memset(mask, 0, sizeof mask);
		mask[numa / (8 * sizeof(unsigned long))] |= 1UL << (numa % (8 * sizeof(unsigned long)));
		if (syscall(SYS_set_mempolicy, 2, mask, sizeof mask * 8) == 0) *bound = 1; // MPOL_BIND
	}
	void *q = NULL;
	int e = f->hostAlloc(&q, n, 0); // cudaHostAllocDefault
	if (*bound) syscall(SYS_set_mempolicy, 0, NULL, 0); // MPOL_DEFAULT
	*p = (uintptr_t)q;
	return e;
}

// hb_mapped_flag allocates one mapped, portable pinned word for the spin
// kernel and returns its host and device addresses.
static int hb_mapped_flag(hb_cuda *f, uintptr_t *host, uintptr_t *dev) {
	void *q = NULL, *d = NULL;
	int e = f->hostAlloc(&q, 64, 1 | 2); // cudaHostAllocPortable | cudaHostAllocMapped
	if (e) return e;
	memset(q, 0, 64);
	e = f->hostGetDevicePointer(&d, q, 0);
	*host = (uintptr_t)q;
	*dev = (uintptr_t)d;
	return e;
}
static int hb_close_fd(int fd) { return close(fd); }
static void *hb_ptr(uintptr_t p) { return P(p); }
static void hb_flag_set(uintptr_t host, uint32_t v) {
	__atomic_store_n((volatile uint32_t *)P(host), v, __ATOMIC_SEQ_CST);
}

static int hb_cu_init(hb_cu *d) { return d->init(0); }
static const char *hb_cu_error(hb_cu *d, int code) {
	const char *s = NULL;
	if (d->getErrorString(code, &s) != 0) return NULL;
	return s;
}
static int hb_cu_attribute(hb_cu *d, int *v, int attr, int ordinal) {
	int dev = 0;
	int e = d->deviceGet(&dev, ordinal); if (e) return e;
	return d->deviceGetAttribute(v, attr, dev);
}
static int hb_cu_dmabuf(hb_cu *d, int *fd, uintptr_t ptr, size_t n, int type) {
	int h = -1;
	int e = d->memGetHandleForAddressRange(&h, (unsigned long long)ptr, n, type, 0);
	*fd = h;
	return e;
}
// hb_cu_load_delay makes dev current through the runtime (which creates
// its primary context) and loads the spin kernel into that context.
static int hb_cu_load_delay(hb_cuda *f, hb_cu *d, int dev, const char *ptx, const char *name, uintptr_t *fn, int *rt) {
	*rt = f->setDevice(dev); if (*rt) return 0;
	*rt = f->free_(NULL); if (*rt) return 0; // initialise the primary context
	void *mod = NULL, *fun = NULL;
	int e = d->moduleLoadData(&mod, ptx); if (e) return e;
	e = d->moduleGetFunction(&fun, mod, name);
	*fn = (uintptr_t)fun;
	return e;
}
static int hb_cu_launch_delay(hb_cuda *f, hb_cu *d, int dev, uintptr_t fn, uintptr_t s, uintptr_t flag, unsigned long long timeout, int *rt) {
	*rt = f->setDevice(dev); if (*rt) return 0;
	// Before CUDA 12.0 cudaSetDevice does not make the primary context
	// current on this OS thread, and cuLaunchKernel uses the thread's
	// current context: make it current, as the load does.
	*rt = f->free_(NULL); if (*rt) return 0;
	unsigned long long fl = flag, to = timeout;
	void *args[2] = { &fl, &to };
	return d->launchKernel(P(fn), 1, 1, 1, 1, 1, 1, 0, P(s), args, NULL);
}
static int hb_memcpy(hb_cuda *f, int dev, uintptr_t dst, uintptr_t src, size_t n, int kind) {
	int e = f->setDevice(dev); if (e) return e;
	return f->memcpy_(P(dst), P(src), n, kind);
}
static int hb_memcpy_async(hb_cuda *f, int dev, uintptr_t dst, uintptr_t src, size_t n, int kind, uintptr_t s) {
	int e = f->setDevice(dev); if (e) return e;
	return f->memcpyAsync(P(dst), P(src), n, kind, P(s));
}
static int hb_memcpy_peer_async(hb_cuda *f, int dev, uintptr_t dst, int dstDev, uintptr_t src, int srcDev, size_t n, uintptr_t s) {
	int e = f->setDevice(dev); if (e) return e;
	return f->memcpyPeerAsync(P(dst), dstDev, P(src), srcDev, n, P(s));
}
static int hb_stream_create(hb_cuda *f, int dev, uintptr_t *s) {
	int e = f->setDevice(dev); if (e) return e;
	void *q = NULL; e = f->streamCreateWithFlags(&q, 1); *s = (uintptr_t)q; return e; // cudaStreamNonBlocking
}
static int hb_stream_destroy(hb_cuda *f, int dev, uintptr_t s) {
	int e = f->setDevice(dev); if (e) return e;
	return f->streamDestroy(P(s));
}
static int hb_stream_sync(hb_cuda *f, int dev, uintptr_t s) {
	int e = f->setDevice(dev); if (e) return e;
	return f->streamSynchronize(P(s));
}
static int hb_stream_wait(hb_cuda *f, int dev, uintptr_t s, uintptr_t ev) {
	int e = f->setDevice(dev); if (e) return e;
	return f->streamWaitEvent(P(s), P(ev), 0);
}
static int hb_event_create(hb_cuda *f, int dev, uintptr_t *ev) {
	int e = f->setDevice(dev); if (e) return e;
	void *q = NULL; e = f->eventCreateWithFlags(&q, 0); *ev = (uintptr_t)q; return e; // cudaEventDefault: timing on
}
static int hb_event_record(hb_cuda *f, int dev, uintptr_t ev, uintptr_t s) {
	int e = f->setDevice(dev); if (e) return e;
	return f->eventRecord(P(ev), P(s));
}
static int hb_event_sync(hb_cuda *f, uintptr_t ev) { return f->eventSynchronize(P(ev)); }
static int hb_event_elapsed(hb_cuda *f, float *ms, uintptr_t a, uintptr_t b) { return f->eventElapsedTime(ms, P(a), P(b)); }
static int hb_event_destroy(hb_cuda *f, uintptr_t ev) { return f->eventDestroy(P(ev)); }

// Pageable host memory: plain page-aligned malloc, touched so that the
// first copy does not pay for page faults.
static int hb_pageable_alloc(uintptr_t *p, size_t n) {
	void *q = NULL;
	if (posix_memalign(&q, 4096, n ? n : 1) != 0) return -1;
	memset(q, 0, n);
	*p = (uintptr_t)q;
	return 0;
}
static void hb_pageable_free(uintptr_t p) { free(P(p)); }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Runtime is a loaded CUDA runtime library. It is safe for concurrent use.
type Runtime struct {
	lib *dl.Library
	f   *C.hb_cuda

	drvOnce sync.Once
	drv     *dl.Library
	d       *C.hb_cu
	drvErr  error

	drvSonames []string

	mu    sync.Mutex
	delay map[int]C.uintptr_t // spin kernel per device
}

// symbols lists every runtime function the binding calls, in hb_cuda order.
var symbols = []dl.Sym{
	{Name: "cudaGetDeviceCount"},
	{Name: "cudaSetDevice"},
	{Name: "cudaDeviceGetAttribute"},
	{Name: "cudaDeviceGetPCIBusId"},
	{Name: "cudaDeviceCanAccessPeer"},
	{Name: "cudaDeviceEnablePeerAccess"},
	{Name: "cudaDeviceDisablePeerAccess"},
	{Name: "cudaDeviceSynchronize"},
	{Name: "cudaMemGetInfo"},
	{Name: "cudaMalloc"},
	{Name: "cudaFree"},
	{Name: "cudaMallocHost"},
	{Name: "cudaFreeHost"},
	{Name: "cudaMemset"},
	{Name: "cudaMemcpy"},
	{Name: "cudaMemcpyAsync"},
	{Name: "cudaMemcpyPeerAsync"},
	{Name: "cudaStreamCreateWithFlags"},
	{Name: "cudaStreamDestroy"},
	{Name: "cudaStreamSynchronize"},
	{Name: "cudaStreamWaitEvent"},
	{Name: "cudaEventCreateWithFlags"},
	{Name: "cudaEventRecord"},
	{Name: "cudaEventSynchronize"},
	// CUDA 12.8 added cudaEventElapsedTime_v2 (same signature); either will do.
	{Name: "cudaEventElapsedTime", Alt: []string{"cudaEventElapsedTime_v2"}},
	{Name: "cudaEventDestroy"},
	{Name: "cudaDriverGetVersion"},
	{Name: "cudaRuntimeGetVersion"},
	{Name: "cudaGetLastError"},
	{Name: "cudaGetErrorString"},
	{Name: "cudaGetErrorName"},
	{Name: "cudaHostAlloc"},
	{Name: "cudaHostGetDevicePointer"},
}

// driverSymbols are the driver API functions; the optional ones came in
// later drivers (cuMemGetHandleForAddressRange: CUDA 11.7).
var driverSymbols = []dl.Sym{
	{Name: "cuInit"},
	{Name: "cuDeviceGet"},
	{Name: "cuDeviceGetAttribute"},
	{Name: "cuGetErrorString"},
	{Name: "cuMemGetHandleForAddressRange", Optional: true},
	{Name: "cuModuleLoadData"},
	{Name: "cuModuleGetFunction"},
	{Name: "cuLaunchKernel"},
}

// Load opens the newest CUDA runtime in Sonames and resolves every function
// the binding uses; the driver (DriverSonames) is loaded when first needed. A missing library is an error wrapping
// dl.ErrLibraryNotFound; a missing function wraps dl.ErrSymbolNotFound.
func Load() (*Runtime, error) { return LoadFrom(Sonames) }

// ErrInsufficientDriver is cudaErrorInsufficientDriver: the runtime is
// newer than the installed driver supports.
const ErrInsufficientDriver = 35

// LoadUsable opens the newest runtime of sonames that the installed driver
// supports: a runtime whose cudaGetDeviceCount fails with
// cudaErrorInsufficientDriver (a libcudart.so.13 from a newer toolkit on the
// library path, a 12.x driver) is passed over for the next soname. It
// returns the runtime, its device count, and what was passed over (empty
// when nothing was).
func LoadUsable(sonames []string) (*Runtime, int, string, error) {
	var skipped []string
	for rest := sonames; len(rest) > 0; {
		r, err := LoadFrom(rest)
		if err != nil {
			if len(skipped) > 0 {
				err = fmt.Errorf("%w (passed over: %s)", err, strings.Join(skipped, "; "))
			}
			return nil, 0, "", err
		}
		n, err := r.DeviceCount()
		var ce *Error
		at := slices.Index(rest, r.Soname())
		if errors.As(err, &ce) && ce.Code == ErrInsufficientDriver && at >= 0 && at+1 < len(rest) {
			skipped = append(skipped, fmt.Sprintf("%s: %s", r.Soname(), ce.Msg))
			rest = rest[at+1:]
			continue
		}
		return r, n, strings.Join(skipped, "; "), err
	}
	return nil, 0, "", fmt.Errorf("cuda: no runtime library to load")
}

// LoadFrom is Load with an explicit list of sonames or paths.
func LoadFrom(sonames []string) (*Runtime, error) { return LoadWith(sonames, DriverSonames) }

// LoadWith is LoadFrom with an explicit list of driver sonames or paths.
func LoadWith(sonames, driverSonames []string) (*Runtime, error) {
	lib, err := dl.Open(sonames, symbols)
	if err != nil {
		return nil, err
	}
	f := (*C.hb_cuda)(C.calloc(1, C.sizeof_hb_cuda))
	a := func(n string) *[0]byte { return (*[0]byte)(lib.Addr(n)) }
	f.getDeviceCount = a("cudaGetDeviceCount")
	f.setDevice = a("cudaSetDevice")
	f.deviceGetAttribute = a("cudaDeviceGetAttribute")
	f.deviceGetPCIBusId = a("cudaDeviceGetPCIBusId")
	f.deviceCanAccessPeer = a("cudaDeviceCanAccessPeer")
	f.deviceEnablePeerAccess = a("cudaDeviceEnablePeerAccess")
	f.deviceDisablePeerAccess = a("cudaDeviceDisablePeerAccess")
	f.deviceSynchronize = a("cudaDeviceSynchronize")
	f.memGetInfo = a("cudaMemGetInfo")
	f.malloc_ = a("cudaMalloc")
	f.free_ = a("cudaFree")
	f.mallocHost = a("cudaMallocHost")
	f.freeHost = a("cudaFreeHost")
	f.memset_ = a("cudaMemset")
	f.memcpy_ = a("cudaMemcpy")
	f.memcpyAsync = a("cudaMemcpyAsync")
	f.memcpyPeerAsync = a("cudaMemcpyPeerAsync")
	f.streamCreateWithFlags = a("cudaStreamCreateWithFlags")
	f.streamDestroy = a("cudaStreamDestroy")
	f.streamSynchronize = a("cudaStreamSynchronize")
	f.streamWaitEvent = a("cudaStreamWaitEvent")
	f.eventCreateWithFlags = a("cudaEventCreateWithFlags")
	f.eventRecord = a("cudaEventRecord")
	f.eventSynchronize = a("cudaEventSynchronize")
	f.eventElapsedTime = a("cudaEventElapsedTime")
	f.eventDestroy = a("cudaEventDestroy")
	f.driverGetVersion = a("cudaDriverGetVersion")
	f.runtimeGetVersion = a("cudaRuntimeGetVersion")
	f.getLastError = a("cudaGetLastError")
	f.getErrorString = a("cudaGetErrorString")
	f.getErrorName = a("cudaGetErrorName")
	f.hostAlloc = a("cudaHostAlloc")
	f.hostGetDevicePointer = a("cudaHostGetDevicePointer")
	return &Runtime{lib: lib, f: f, delay: map[int]C.uintptr_t{}, drvSonames: driverSonames}, nil
}

// Soname returns the library that was loaded, e.g. "libcudart.so.12".
func (r *Runtime) Soname() string { return r.lib.Soname() }

// check turns a cudaError_t into nil or an *Error and clears the runtime's
// last-error state so that a handled error does not resurface later.
func (r *Runtime) check(op string, code C.int) error {
	if code == 0 {
		return nil
	}
	C.hb_last_error(r.f)
	return &Error{Op: op, Code: int(code), Name: C.GoString(C.hb_error_name(r.f, code)), Msg: C.GoString(C.hb_error_string(r.f, code))}
}

// locked runs fn with the goroutine wired to its OS thread: the CUDA
// current device is per thread, and every wrapper selects the device it
// acts on before the call.
func locked(fn func() C.int) C.int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return fn()
}

// DriverVersion returns cudaDriverGetVersion (e.g. 12040).
func (r *Runtime) DriverVersion() (int, error) {
	var v C.int
	return int(v), r.check("cudaDriverGetVersion", C.hb_driver_version(r.f, &v))
}

// RuntimeVersion returns cudaRuntimeGetVersion (e.g. 12040).
func (r *Runtime) RuntimeVersion() (int, error) {
	var v C.int
	return int(v), r.check("cudaRuntimeGetVersion", C.hb_runtime_version(r.f, &v))
}

// ErrorString returns cudaGetErrorString(code).
func (r *Runtime) ErrorString(code int) string {
	return C.GoString(C.hb_error_string(r.f, C.int(code)))
}

// DeviceCount returns the number of visible GPUs.
func (r *Runtime) DeviceCount() (int, error) {
	var n C.int
	return int(n), r.check("cudaGetDeviceCount", C.hb_get_device_count(r.f, &n))
}

// SetDevice selects dev as the current device of the calling OS thread.
// Callers that rely on it must hold runtime.LockOSThread; the other methods
// select their device themselves.
func (r *Runtime) SetDevice(dev int) error {
	return r.check("cudaSetDevice", C.hb_set_device(r.f, C.int(dev)))
}

// Attribute returns cudaDeviceGetAttribute(attr, dev).
func (r *Runtime) Attribute(attr Attr, dev int) (int, error) {
	var v C.int
	return int(v), r.check("cudaDeviceGetAttribute", C.hb_attribute(r.f, &v, C.int(attr), C.int(dev)))
}

// PCIBusID returns the device's PCI address as the runtime prints it,
// e.g. "0000:18:00.0".
func (r *Runtime) PCIBusID(dev int) (string, error) {
	buf := make([]C.char, 64)
	if err := r.check("cudaDeviceGetPCIBusId", C.hb_pci_bus_id(r.f, &buf[0], C.int(len(buf)), C.int(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// MemInfo returns the free and total device memory of dev in bytes.
func (r *Runtime) MemInfo(dev int) (free, total uint64, err error) {
	var fr, tot C.size_t
	code := locked(func() C.int { return C.hb_mem_info(r.f, C.int(dev), &fr, &tot) })
	return uint64(fr), uint64(tot), r.check("cudaMemGetInfo", code)
}

// CanAccessPeer reports cudaDeviceCanAccessPeer(dev, peer).
func (r *Runtime) CanAccessPeer(dev, peer int) (bool, error) {
	var v C.int
	err := r.check("cudaDeviceCanAccessPeer", C.hb_can_access_peer(r.f, &v, C.int(dev), C.int(peer)))
	return v != 0, err
}

// EnablePeerAccess lets dev access peer's memory directly. Enabling an
// access that is already on is not an error.
func (r *Runtime) EnablePeerAccess(dev, peer int) error {
	code := locked(func() C.int { return C.hb_enable_peer(r.f, C.int(dev), C.int(peer)) })
	if code == errPeerAccessAlreadyEnabled {
		C.hb_last_error(r.f)
		return nil
	}
	return r.check("cudaDeviceEnablePeerAccess", code)
}

// DisablePeerAccess turns off dev's direct access to peer. Disabling an
// access that is off is not an error.
func (r *Runtime) DisablePeerAccess(dev, peer int) error {
	code := locked(func() C.int { return C.hb_disable_peer(r.f, C.int(dev), C.int(peer)) })
	if code == errPeerAccessNotEnabled {
		C.hb_last_error(r.f)
		return nil
	}
	return r.check("cudaDeviceDisablePeerAccess", code)
}

// DeviceSynchronize waits for all work on dev.
func (r *Runtime) DeviceSynchronize(dev int) error {
	return r.check("cudaDeviceSynchronize", locked(func() C.int { return C.hb_device_sync(r.f, C.int(dev)) }))
}

// Malloc allocates n bytes on dev.
func (r *Runtime) Malloc(dev int, n uint64) (Ptr, error) {
	var p C.uintptr_t
	code := locked(func() C.int { return C.hb_malloc(r.f, C.int(dev), &p, C.size_t(n)) })
	return Ptr(p), r.check("cudaMalloc", code)
}

// Free releases memory Malloc returned on dev.
func (r *Runtime) Free(dev int, p Ptr) error {
	return r.check("cudaFree", locked(func() C.int { return C.hb_free(r.f, C.int(dev), C.uintptr_t(p)) }))
}

// Memset sets n bytes at p on dev to value (synchronous).
func (r *Runtime) Memset(dev int, p Ptr, value byte, n uint64) error {
	return r.check("cudaMemset", locked(func() C.int { return C.hb_memset(r.f, C.int(dev), C.uintptr_t(p), C.int(value), C.size_t(n)) }))
}

// MallocHost allocates n bytes of pinned (page-locked) host memory.
func (r *Runtime) MallocHost(n uint64) (Ptr, error) {
	var p C.uintptr_t
	return Ptr(p), r.check("cudaMallocHost", C.hb_malloc_host(r.f, &p, C.size_t(n)))
}

// FreeHost releases memory MallocHost returned.
func (r *Runtime) FreeHost(p Ptr) error {
	return r.check("cudaFreeHost", C.hb_free_host(r.f, C.uintptr_t(p)))
}

// MallocPageable allocates n bytes of ordinary (pageable) host memory,
// page-aligned and zeroed, outside the Go heap.
func MallocPageable(n uint64) (Ptr, error) {
	var p C.uintptr_t
	if C.hb_pageable_alloc(&p, C.size_t(n)) != 0 {
		return 0, fmt.Errorf("cuda: cannot allocate %d bytes of host memory", n)
	}
	return Ptr(p), nil
}

// FreePageable releases memory MallocPageable returned.
func FreePageable(p Ptr) { C.hb_pageable_free(C.uintptr_t(p)) }

// Memcpy copies n bytes synchronously with dev as the current device.
func (r *Runtime) Memcpy(dev int, dst, src Ptr, n uint64, kind MemcpyKind) error {
	return r.check("cudaMemcpy", locked(func() C.int {
		return C.hb_memcpy(r.f, C.int(dev), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(kind))
	}))
}

// MemcpyAsync enqueues a copy of n bytes on stream s of device dev.
func (r *Runtime) MemcpyAsync(dev int, dst, src Ptr, n uint64, kind MemcpyKind, s Stream) error {
	return r.check("cudaMemcpyAsync", locked(func() C.int {
		return C.hb_memcpy_async(r.f, C.int(dev), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(kind), C.uintptr_t(s))
	}))
}

// MemcpyPeerAsync enqueues a copy of n bytes from srcDev to dstDev on
// stream s, which belongs to device dev. Without peer access the driver
// stages the copy through host memory.
func (r *Runtime) MemcpyPeerAsync(dev int, dst Ptr, dstDev int, src Ptr, srcDev int, n uint64, s Stream) error {
	return r.check("cudaMemcpyPeerAsync", locked(func() C.int {
		return C.hb_memcpy_peer_async(r.f, C.int(dev), C.uintptr_t(dst), C.int(dstDev), C.uintptr_t(src), C.int(srcDev), C.size_t(n), C.uintptr_t(s))
	}))
}

// StreamCreate creates a non-blocking stream on dev.
func (r *Runtime) StreamCreate(dev int) (Stream, error) {
	var s C.uintptr_t
	code := locked(func() C.int { return C.hb_stream_create(r.f, C.int(dev), &s) })
	return Stream(s), r.check("cudaStreamCreateWithFlags", code)
}

// StreamDestroy destroys s, which belongs to dev.
func (r *Runtime) StreamDestroy(dev int, s Stream) error {
	return r.check("cudaStreamDestroy", locked(func() C.int { return C.hb_stream_destroy(r.f, C.int(dev), C.uintptr_t(s)) }))
}

// StreamSynchronize waits until all work on s (of device dev) is done.
func (r *Runtime) StreamSynchronize(dev int, s Stream) error {
	return r.check("cudaStreamSynchronize", locked(func() C.int { return C.hb_stream_sync(r.f, C.int(dev), C.uintptr_t(s)) }))
}

// StreamWaitEvent makes later work on s (of device dev) wait for e.
func (r *Runtime) StreamWaitEvent(dev int, s Stream, e Event) error {
	return r.check("cudaStreamWaitEvent", locked(func() C.int { return C.hb_stream_wait(r.f, C.int(dev), C.uintptr_t(s), C.uintptr_t(e)) }))
}

// EventCreate creates a timing event on dev.
func (r *Runtime) EventCreate(dev int) (Event, error) {
	var e C.uintptr_t
	code := locked(func() C.int { return C.hb_event_create(r.f, C.int(dev), &e) })
	return Event(e), r.check("cudaEventCreateWithFlags", code)
}

// EventRecord records e on stream s of device dev.
func (r *Runtime) EventRecord(dev int, e Event, s Stream) error {
	return r.check("cudaEventRecord", locked(func() C.int { return C.hb_event_record(r.f, C.int(dev), C.uintptr_t(e), C.uintptr_t(s)) }))
}

// EventSynchronize waits until e has completed.
func (r *Runtime) EventSynchronize(e Event) error {
	return r.check("cudaEventSynchronize", C.hb_event_sync(r.f, C.uintptr_t(e)))
}

// EventElapsed returns the GPU time between two completed events of the
// same device (cudaEventElapsedTime, about 0.5 µs resolution).
func (r *Runtime) EventElapsed(start, end Event) (time.Duration, error) {
	var ms C.float
	if err := r.check("cudaEventElapsedTime", C.hb_event_elapsed(r.f, &ms, C.uintptr_t(start), C.uintptr_t(end))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// EventDestroy destroys e.
func (r *Runtime) EventDestroy(e Event) error {
	return r.check("cudaEventDestroy", C.hb_event_destroy(r.f, C.uintptr_t(e)))
}

// MallocHostNUMA allocates n bytes of pinned host memory on NUMA node numa
// (numa < 0: no binding). bound is false when the kernel refused the
// binding; the memory is then wherever the kernel placed it.
func (r *Runtime) MallocHostNUMA(n uint64, numa int) (p Ptr, bound bool, err error) {
	var q C.uintptr_t
	var b C.int
	code := locked(func() C.int { return C.hb_malloc_host_numa(r.f, &q, C.size_t(n), C.int(numa), &b) })
	return Ptr(q), b != 0, r.check("cudaHostAlloc", code)
}

// MappedFlag allocates a word of mapped pinned host memory and returns its
// host and device addresses (free it with FreeHost(host)).
func (r *Runtime) MappedFlag() (host, dev Ptr, err error) {
	var h, d C.uintptr_t
	if err := r.check("cudaHostAlloc", C.hb_mapped_flag(r.f, &h, &d)); err != nil {
		return 0, 0, err
	}
	return Ptr(h), Ptr(d), nil
}

// SetFlag stores v into the mapped word at host.
func SetFlag(host Ptr, v uint32) { C.hb_flag_set(C.uintptr_t(host), C.uint32_t(v)) }

// driver loads libcuda once.
func (r *Runtime) driver() (*C.hb_cu, error) {
	r.drvOnce.Do(func() {
		lib, err := dl.Open(r.drvSonames, driverSymbols)
		if err != nil {
			r.drvErr = err
			return
		}
		d := (*C.hb_cu)(C.calloc(1, C.sizeof_hb_cu))
		a := func(n string) *[0]byte { return (*[0]byte)(lib.Addr(n)) }
		d.init = a("cuInit")
		d.deviceGet = a("cuDeviceGet")
		d.deviceGetAttribute = a("cuDeviceGetAttribute")
		d.getErrorString = a("cuGetErrorString")
		d.memGetHandleForAddressRange = a("cuMemGetHandleForAddressRange")
		d.moduleLoadData = a("cuModuleLoadData")
		d.moduleGetFunction = a("cuModuleGetFunction")
		d.launchKernel = a("cuLaunchKernel")
		if code := C.hb_cu_init(d); code != 0 {
			r.drvErr = r.cuError(d, "cuInit", code)
			return
		}
		r.drv, r.d = lib, d
	})
	return r.d, r.drvErr
}

func (r *Runtime) cuError(d *C.hb_cu, op string, code C.int) error {
	e := &DriverError{Op: op, Code: int(code)}
	if s := C.hb_cu_error(d, code); s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

// DriverAttribute returns cuDeviceGetAttribute(attr) of CUDA ordinal dev.
func (r *Runtime) DriverAttribute(attr, dev int) (int, error) {
	d, err := r.driver()
	if err != nil {
		return 0, err
	}
	var v C.int
	if code := C.hb_cu_attribute(d, &v, C.int(attr), C.int(dev)); code != 0 {
		return 0, r.cuError(d, "cuDeviceGetAttribute", code)
	}
	return int(v), nil
}

// DMABufFD exports n bytes of device memory at p as a DMA-BUF file
// descriptor (cuMemGetHandleForAddressRange with
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD); p and n must be page-aligned. The
// caller closes the descriptor. A driver older than CUDA 11.7 lacks the
// function: the error wraps dl.ErrSymbolNotFound.
func (r *Runtime) DMABufFD(p Ptr, n uint64) (int, error) {
	d, err := r.driver()
	if err != nil {
		return -1, err
	}
	if !r.drv.Has("cuMemGetHandleForAddressRange") {
		return -1, fmt.Errorf("%s: %w: cuMemGetHandleForAddressRange (the driver predates CUDA 11.7)", r.drv.Soname(), dl.ErrSymbolNotFound)
	}
	var fd C.int
	if code := C.hb_cu_dmabuf(d, &fd, C.uintptr_t(p), C.size_t(n), RangeHandleDMABufFD); code != 0 {
		return -1, r.cuError(d, "cuMemGetHandleForAddressRange", code)
	}
	return int(fd), nil
}

// LaunchDelay queues the spin kernel (DelayPTX) on stream s of device dev:
// it holds the stream until the word at flagDev (a MappedFlag) becomes
// non-zero or timeoutClocks GPU clock cycles pass. The kernel is loaded
// into dev's primary context on first use.
func (r *Runtime) LaunchDelay(dev int, s Stream, flagDev Ptr, timeoutClocks uint64) error {
	d, err := r.driver()
	if err != nil {
		return err
	}
	r.mu.Lock()
	fn, ok := r.delay[dev]
	r.mu.Unlock()
	if !ok {
		ptx := C.CString(DelayPTX)
		name := C.CString(DelayKernelName)
		var rt C.int
		code := locked(func() C.int { return C.hb_cu_load_delay(r.f, d, C.int(dev), ptx, name, &fn, &rt) })
		C.free(unsafe.Pointer(ptx))
		C.free(unsafe.Pointer(name))
		if rt != 0 {
			return r.check("cudaSetDevice", rt)
		}
		if code != 0 {
			return r.cuError(d, "cuModuleLoadData", code)
		}
		r.mu.Lock()
		r.delay[dev] = fn
		r.mu.Unlock()
	}
	var rt C.int
	code := locked(func() C.int {
		return C.hb_cu_launch_delay(r.f, d, C.int(dev), fn, C.uintptr_t(s), C.uintptr_t(flagDev), C.ulonglong(timeoutClocks), &rt)
	})
	if rt != 0 {
		return r.check("cudaSetDevice", rt)
	}
	if code != 0 {
		return r.cuError(d, "cuLaunchKernel", code)
	}
	return nil
}

// CloseFD closes a file descriptor DMABufFD returned.
func CloseFD(fd int) error {
	if C.hb_close_fd(C.int(fd)) != 0 {
		return fmt.Errorf("cuda: close of DMA-BUF descriptor %d failed", fd)
	}
	return nil
}

// HostSlice returns the n bytes of host memory at p (pinned or pageable
// memory this package allocated) as a slice; it must not be used after the
// memory is freed.
func HostSlice(p Ptr, n int) []byte {
	if p == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(C.hb_ptr(C.uintptr_t(p))), n)
}
