// Package cuda binds the few CUDA runtime functions hwbench uses, loaded at
// run time from libcudart (no CUDA headers or libraries at build time).
//
// Types are declared as plain integers: device and host addresses are Ptr,
// streams and events are opaque handles. Every call that needs a current
// device locks the calling goroutine to its OS thread, selects the device
// and makes the call in one step, so goroutines may use a Runtime
// concurrently. Built without cgo or for a system other than Linux, Load
// returns an error wrapping dl.ErrUnsupported.
package cuda
