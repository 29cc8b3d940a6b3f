//go:build cgo && linux

package cuda

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
} hb_cuda;

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
static int hb_memset(hb_cuda *f, int dev, uintptr_t p, int v, size_t n) {
	int e = f->setDevice(dev); if (e) return e;
	return f->memset_(P(p), v, n);
}
static int hb_malloc_host(hb_cuda *f, uintptr_t *p, size_t n) {
	void *q = NULL; int e = f->mallocHost(&q, n); *p = (uintptr_t)q; return e;
}
static int hb_free_host(hb_cuda *f, uintptr_t p) { return f->freeHost(P(p)); }
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
	"fmt"
	"runtime"
	"time"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Runtime is a loaded CUDA runtime library. It is safe for concurrent use.
type Runtime struct {
	lib *dl.Library
	f   *C.hb_cuda
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
}

// Load opens the newest CUDA runtime in Sonames and resolves every function
// the binding uses. A missing library is an error wrapping
// dl.ErrLibraryNotFound; a missing function wraps dl.ErrSymbolNotFound.
func Load() (*Runtime, error) { return LoadFrom(Sonames) }

// LoadFrom is Load with an explicit list of sonames or paths.
func LoadFrom(sonames []string) (*Runtime, error) {
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
	return &Runtime{lib: lib, f: f}, nil
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
