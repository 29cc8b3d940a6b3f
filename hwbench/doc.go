// Package hwbench measures the real machine: GPU topology through NVML and
// sysfs, copy and peer-to-peer bandwidth through the CUDA runtime, NCCL
// collective sweeps with the nccl-tests timing method, and GPUDirect RDMA
// through ibverbs. It writes a JSON report (format "collsim-hwbench/1")
// that ingest (and so calibrate and inspect) reads, and nccl-tests text for the NCCL sweeps.
//
// Run runs the probes ("topo", "copy", "p2p", "nccl", "gdr") on a Backend
// and rewrites the report after every step. Open returns the native
// backend, which loads libcudart at once and NVML, NCCL and libibverbs when
// a probe first needs them; a missing library is an error wrapping
// ErrLibraryNotFound and the probes that need it are skipped. NewFake
// returns a deterministic simulated machine for tests and dry runs.
// Multi-process runs meet through a small TCP bootstrap (Connect) at rank
// 0's address to share the NCCL unique id.
//
// Measurement logic is pure Go behind small interfaces (Runtime, Stream,
// Event, Collectives, Comm, RDMA, Loopback); cgo lives only under
// hwbench/internal, which loads the vendor libraries at run time with
// dlopen, so collsim builds and tests on machines without GPUs and
// CGO_ENABLED=0 builds work (the native backend then reports
// ErrUnsupported). hwbench imports model only. See docs/hwbench.md.
package hwbench
