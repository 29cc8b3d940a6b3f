// Package hwbench measures the real machine: GPU topology through NVML,
// copy and peer-to-peer bandwidth through the CUDA runtime, NCCL collective
// sweeps with the nccl-tests timing method, and GPUDirect RDMA through
// ibverbs. It writes records that calibrate reads.
//
// Measurement logic is pure Go behind a small Backend interface; cgo lives
// only under hwbench/internal, which loads the vendor libraries at run time
// with dlopen, so collsim builds and tests on machines without GPUs.
// hwbench imports model only.
package hwbench
