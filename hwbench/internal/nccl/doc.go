// Package nccl binds the NCCL functions hwbench uses, loaded at run time
// from libnccl.so.2 (no NCCL headers at build time).
//
// Communicators and streams are opaque handles, buffers are device
// addresses. NCCL groups are per OS thread: callers wrap GroupStart, the
// collective calls and GroupEnd in runtime.LockOSThread. Built without cgo
// or for a system other than Linux, Load returns an error wrapping
// dl.ErrUnsupported.
package nccl
