// Package dl loads shared libraries at run time (dlopen/dlsym) for the
// hwbench bindings, so collsim needs no CUDA, NCCL or ibverbs headers or
// libraries at build time.
//
// Open tries a list of sonames in order and resolves every symbol the
// caller names once, at load; a missing library is an error wrapping
// ErrLibraryNotFound with the dynamic loader's message, a missing symbol an
// error wrapping ErrSymbolNotFound that names it. Built without cgo or on a
// system other than Linux, Open returns an error wrapping ErrUnsupported.
package dl
