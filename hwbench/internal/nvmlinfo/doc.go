// Package nvmlinfo reads the GPU inventory hwbench's topology probe needs
// from NVML through github.com/NVIDIA/go-nvml (which itself dlopens
// libnvidia-ml.so.1): GPUs, PCI bus ids, PCIe generation and width, NVLink
// state, version and remote end per link, P2P status and the topology
// common ancestor per pair. Built without cgo or for a system other than
// Linux, Query returns an error wrapping dl.ErrUnsupported.
package nvmlinfo
