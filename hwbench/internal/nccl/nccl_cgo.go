//go:build cgo && linux

package nccl

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } hb_nccl_uid;

// Function pointers into libnccl. ncclResult_t, ncclDataType_t and
// ncclRedOp_t are ints; communicators and streams are opaque pointers.
typedef struct {
	int (*getVersion)(int *);
	int (*getUniqueId)(hb_nccl_uid *);
	int (*commInitRank)(void **, int, hb_nccl_uid, int);
	int (*commInitAll)(void **, int, const int *);
	int (*commDestroy)(void *);
	int (*commAbort)(void *);
	const char *(*getErrorString)(int);
	const char *(*getLastError)(void *);
	int (*allReduce)(const void *, void *, size_t, int, int, void *, void *);
	int (*allGather)(const void *, void *, size_t, int, void *, void *);
	int (*reduceScatter)(const void *, void *, size_t, int, int, void *, void *);
	int (*broadcast)(const void *, void *, size_t, int, int, void *, void *);
	int (*groupStart)(void);
	int (*groupEnd)(void);
	int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *);
	int (*send)(const void *, size_t, int, int, void *, void *);
	int (*recv)(void *, size_t, int, int, void *, void *);
} hb_nccl;

#define P(x) ((void *)(uintptr_t)(x))

static int hb_version(hb_nccl *f, int *v) { return f->getVersion(v); }
static int hb_unique_id(hb_nccl *f, char *out) {
	hb_nccl_uid id;
	memset(&id, 0, sizeof id);
	int e = f->getUniqueId(&id);
	memcpy(out, id.internal, sizeof id.internal);
	return e;
}
static int hb_init_rank(hb_nccl *f, uintptr_t *comm, int nranks, const char *idbytes, int rank) {
	hb_nccl_uid id;
	memcpy(id.internal, idbytes, sizeof id.internal);
	void *c = NULL;
	int e = f->commInitRank(&c, nranks, id, rank);
	*comm = (uintptr_t)c;
	return e;
}
static int hb_init_all(hb_nccl *f, uintptr_t *comms, int n, const int *devs) {
	void **c = calloc((size_t)n, sizeof(void *));
	if (c == NULL) return -1; // not an NCCL code: out of host memory
	int e = f->commInitAll(c, n, devs);
	for (int i = 0; i < n; i++) comms[i] = (uintptr_t)c[i];
	free(c);
	return e;
}
static int hb_destroy(hb_nccl *f, uintptr_t c) { return f->commDestroy(P(c)); }
static int hb_abort(hb_nccl *f, uintptr_t c) { return f->commAbort(P(c)); }
static const char *hb_error_string(hb_nccl *f, int e) { return f->getErrorString(e); }
static const char *hb_last_error(hb_nccl *f, uintptr_t c) { return f->getLastError ? f->getLastError(P(c)) : NULL; }
static int hb_all_reduce(hb_nccl *f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, uintptr_t c, uintptr_t st) {
	return f->allReduce(P(s), P(r), n, dt, op, P(c), P(st));
}
static int hb_all_gather(hb_nccl *f, uintptr_t s, uintptr_t r, size_t n, int dt, uintptr_t c, uintptr_t st) {
	return f->allGather(P(s), P(r), n, dt, P(c), P(st));
}
static int hb_reduce_scatter(hb_nccl *f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, uintptr_t c, uintptr_t st) {
	return f->reduceScatter(P(s), P(r), n, dt, op, P(c), P(st));
}
static int hb_broadcast(hb_nccl *f, uintptr_t s, uintptr_t r, size_t n, int dt, int root, uintptr_t c, uintptr_t st) {
	return f->broadcast(P(s), P(r), n, dt, root, P(c), P(st));
}
static int hb_reduce(hb_nccl *f, uintptr_t s, uintptr_t r, size_t n, int dt, int op, int root, uintptr_t c, uintptr_t st) {
	return f->reduce(P(s), P(r), n, dt, op, root, P(c), P(st));
}
static int hb_send(hb_nccl *f, uintptr_t s, size_t n, int dt, int peer, uintptr_t c, uintptr_t st) {
	return f->send(P(s), n, dt, peer, P(c), P(st));
}
static int hb_recv(hb_nccl *f, uintptr_t r, size_t n, int dt, int peer, uintptr_t c, uintptr_t st) {
	return f->recv(P(r), n, dt, peer, P(c), P(st));
}
static int hb_group_start(hb_nccl *f) { return f->groupStart(); }
static int hb_group_end(hb_nccl *f) { return f->groupEnd(); }
*/
import "C"

import (
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

// Lib is a loaded NCCL library. It is safe for concurrent use, except that
// NCCL groups belong to the OS thread that opened them.
type Lib struct {
	lib *dl.Library
	f   *C.hb_nccl
}

var symbols = []dl.Sym{
	{Name: "ncclGetVersion"},
	{Name: "ncclGetUniqueId"},
	{Name: "ncclCommInitRank"},
	{Name: "ncclCommInitAll"},
	{Name: "ncclCommDestroy"},
	{Name: "ncclCommAbort"},
	{Name: "ncclGetErrorString"},
	{Name: "ncclGetLastError", Optional: true}, // NCCL 2.13+
	{Name: "ncclAllReduce"},
	{Name: "ncclAllGather"},
	{Name: "ncclReduceScatter"},
	{Name: "ncclBroadcast"},
	{Name: "ncclGroupStart"},
	{Name: "ncclGroupEnd"},
	{Name: "ncclReduce"},
	{Name: "ncclSend", Optional: true}, // NCCL 2.7+
	{Name: "ncclRecv", Optional: true},
}

// Load opens libnccl.so.2 and resolves every function the binding uses.
// A missing library is an error wrapping dl.ErrLibraryNotFound.
func Load() (*Lib, error) { return LoadFrom(Sonames) }

// LoadFrom is Load with an explicit list of sonames or paths.
func LoadFrom(sonames []string) (*Lib, error) {
	lib, err := dl.Open(sonames, symbols)
	if err != nil {
		return nil, err
	}
	f := (*C.hb_nccl)(C.calloc(1, C.sizeof_hb_nccl))
	a := func(n string) *[0]byte { return (*[0]byte)(lib.Addr(n)) }
	f.getVersion = a("ncclGetVersion")
	f.getUniqueId = a("ncclGetUniqueId")
	f.commInitRank = a("ncclCommInitRank")
	f.commInitAll = a("ncclCommInitAll")
	f.commDestroy = a("ncclCommDestroy")
	f.commAbort = a("ncclCommAbort")
	f.getErrorString = a("ncclGetErrorString")
	f.getLastError = a("ncclGetLastError")
	f.allReduce = a("ncclAllReduce")
	f.allGather = a("ncclAllGather")
	f.reduceScatter = a("ncclReduceScatter")
	f.broadcast = a("ncclBroadcast")
	f.groupStart = a("ncclGroupStart")
	f.groupEnd = a("ncclGroupEnd")
	f.reduce = a("ncclReduce")
	f.send = a("ncclSend")
	f.recv = a("ncclRecv")
	return &Lib{lib: lib, f: f}, nil
}

// Soname returns the library that was loaded.
func (l *Lib) Soname() string { return l.lib.Soname() }

func (l *Lib) check(op string, code C.int, c Comm) error {
	if code == 0 {
		return nil
	}
	e := &Error{Op: op, Code: int(code), Msg: C.GoString(C.hb_error_string(l.f, code))}
	if s := C.hb_last_error(l.f, C.uintptr_t(c)); s != nil {
		e.Detail = C.GoString(s)
	}
	return e
}

// Version returns ncclGetVersion's code (decode it with VersionString).
func (l *Lib) Version() (int, error) {
	var v C.int
	return int(v), l.check("ncclGetVersion", C.hb_version(l.f, &v), 0)
}

// GetUniqueID creates the id rank 0 hands to every rank of a new
// communicator.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	code := C.hb_unique_id(l.f, (*C.char)(unsafe.Pointer(&id[0])))
	return id, l.check("ncclGetUniqueId", code, 0)
}

// InitRank joins rank rank of an nranks communicator. It blocks until every
// rank has joined. The calling OS thread's current CUDA device must be the
// rank's GPU: lock the thread and select the device first.
func (l *Lib) InitRank(id UniqueID, nranks, rank int) (Comm, error) {
	var c C.uintptr_t
	code := C.hb_init_rank(l.f, &c, C.int(nranks), (*C.char)(unsafe.Pointer(&id[0])), C.int(rank))
	return Comm(c), l.check("ncclCommInitRank", code, 0)
}

// InitAll creates one communicator per device of devs in this process,
// rank i on devs[i].
func (l *Lib) InitAll(devs []int) ([]Comm, error) {
	if len(devs) == 0 {
		return nil, &Error{Op: "ncclCommInitAll", Code: 4, Msg: "no devices given"}
	}
	cdevs := make([]C.int, len(devs))
	for i, d := range devs {
		cdevs[i] = C.int(d)
	}
	out := make([]C.uintptr_t, len(devs))
	code := C.hb_init_all(l.f, &out[0], C.int(len(devs)), &cdevs[0])
	if err := l.check("ncclCommInitAll", code, 0); err != nil {
		return nil, err
	}
	comms := make([]Comm, len(devs))
	for i, c := range out {
		comms[i] = Comm(c)
	}
	return comms, nil
}

// Destroy frees a communicator after its work has finished.
func (l *Lib) Destroy(c Comm) error {
	return l.check("ncclCommDestroy", C.hb_destroy(l.f, C.uintptr_t(c)), 0)
}

// Abort frees a communicator without waiting for outstanding work.
func (l *Lib) Abort(c Comm) error {
	return l.check("ncclCommAbort", C.hb_abort(l.f, C.uintptr_t(c)), 0)
}

// ErrorString returns ncclGetErrorString(code).
func (l *Lib) ErrorString(code int) string { return C.GoString(C.hb_error_string(l.f, C.int(code))) }

// GroupStart opens a group on the calling OS thread.
func (l *Lib) GroupStart() error { return l.check("ncclGroupStart", C.hb_group_start(l.f), 0) }

// GroupEnd closes the calling OS thread's group and launches its work.
func (l *Lib) GroupEnd() error { return l.check("ncclGroupEnd", C.hb_group_end(l.f), 0) }

// AllReduce enqueues ncclAllReduce of count elements on stream.
func (l *Lib) AllReduce(send, recv uint64, count uint64, dt DataType, op RedOp, c Comm, stream uintptr) error {
	return l.check("ncclAllReduce", C.hb_all_reduce(l.f, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(dt), C.int(op), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// AllGather enqueues ncclAllGather of sendcount elements per rank.
func (l *Lib) AllGather(send, recv uint64, sendcount uint64, dt DataType, c Comm, stream uintptr) error {
	return l.check("ncclAllGather", C.hb_all_gather(l.f, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(sendcount), C.int(dt), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// ReduceScatter enqueues ncclReduceScatter with recvcount elements per rank.
func (l *Lib) ReduceScatter(send, recv uint64, recvcount uint64, dt DataType, op RedOp, c Comm, stream uintptr) error {
	return l.check("ncclReduceScatter", C.hb_reduce_scatter(l.f, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(recvcount), C.int(dt), C.int(op), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// Broadcast enqueues ncclBroadcast of count elements from root.
func (l *Lib) Broadcast(send, recv uint64, count uint64, dt DataType, root int, c Comm, stream uintptr) error {
	return l.check("ncclBroadcast", C.hb_broadcast(l.f, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(dt), C.int(root), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// Reduce enqueues ncclReduce of count elements to root.
func (l *Lib) Reduce(send, recv uint64, count uint64, dt DataType, op RedOp, root int, c Comm, stream uintptr) error {
	return l.check("ncclReduce", C.hb_reduce(l.f, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(dt), C.int(op), C.int(root), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// HasP2P reports whether the library has ncclSend and ncclRecv (2.7+).
func (l *Lib) HasP2P() bool { return l.lib.Has("ncclSend") && l.lib.Has("ncclRecv") }

// Send enqueues ncclSend of count elements to peer.
func (l *Lib) Send(send uint64, count uint64, dt DataType, peer int, c Comm, stream uintptr) error {
	if !l.HasP2P() {
		return &Error{Op: "ncclSend", Code: 5, Msg: l.Soname() + " predates ncclSend/ncclRecv (NCCL 2.7)"}
	}
	return l.check("ncclSend", C.hb_send(l.f, C.uintptr_t(send), C.size_t(count), C.int(dt), C.int(peer), C.uintptr_t(c), C.uintptr_t(stream)), c)
}

// Recv enqueues ncclRecv of count elements from peer.
func (l *Lib) Recv(recv uint64, count uint64, dt DataType, peer int, c Comm, stream uintptr) error {
	if !l.HasP2P() {
		return &Error{Op: "ncclRecv", Code: 5, Msg: l.Soname() + " predates ncclSend/ncclRecv (NCCL 2.7)"}
	}
	return l.check("ncclRecv", C.hb_recv(l.f, C.uintptr_t(recv), C.size_t(count), C.int(dt), C.int(peer), C.uintptr_t(c), C.uintptr_t(stream)), c)
}
