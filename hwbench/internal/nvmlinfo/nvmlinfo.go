package nvmlinfo

import (
	"fmt"
	"strings"
)

// Sonames is the library go-nvml loads.
var Sonames = []string{"libnvidia-ml.so.1"}

// NVLink is one NVLink of a GPU.
type NVLink struct {
	Link    int    `json:"link"`
	Active  bool   `json:"active"`
	Version int    `json:"version,omitempty"`
	Remote  string `json:"remote_bus_id,omitempty"`
	// RemoteType is "gpu", "switch", "ibmnpu" or "unknown".
	RemoteType string `json:"remote_type,omitempty"`
}

// GPU is one GPU as NVML sees it.
type GPU struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	UUID  string `json:"uuid,omitempty"`
	// BusID is the PCI address in sysfs form, e.g. "0000:18:00.0".
	BusID       string `json:"bus_id"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	// FreeBytes is the free device memory (nvmlDeviceGetMemoryInfo).
	FreeBytes uint64 `json:"free_bytes,omitempty"`
	// NUMA is the NUMA node, -1 when NVML does not know.
	NUMA                int `json:"numa"`
	CCMajor, CCMinor    int `json:"-"`
	PCIeGen, PCIeWidth  int `json:"-"`
	PCIeMaxGen, PCIeMax int `json:"-"`
	NVLinks             []NVLink
}

// Pair is what NVML says about two GPUs.
type Pair struct {
	A, B int
	// Ancestor is the topology common ancestor: "internal", "single",
	// "multiple", "hostbridge", "node" or "system" (nvidia-smi's X, PIX, PXB,
	// PHB, NODE, SYS).
	Ancestor string
	// P2P maps capability ("read", "write", "nvlink", "atomics") to status
	// ("ok", "chipset-not-supported", "gpu-not-supported",
	// "topology-not-supported", "disabled-by-regkey", "not-supported",
	// "unknown").
	P2P map[string]string
}

// Info is the NVML inventory.
type Info struct {
	Driver string
	// CUDADriver is the CUDA version the driver supports (12040 for 12.4).
	CUDADriver  int
	NVMLVersion string
	GPUs        []GPU
	Pairs       []Pair
}

// NormalizeBusID turns NVML's "00000000:18:00.0" (8-digit domain, upper
// case) into sysfs form "0000:18:00.0".
func NormalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimRight(strings.TrimSpace(s), "\x00"))
	parts := strings.SplitN(s, ":", 2)
	if len(parts) == 2 && len(parts[0]) > 4 {
		s = parts[0][len(parts[0])-4:] + ":" + parts[1]
	}
	return s
}

// AncestorName names an NVML nvmlGpuTopologyLevel_t value.
func AncestorName(level int) string {
	switch level {
	case 0:
		return "internal"
	case 10:
		return "single"
	case 20:
		return "multiple"
	case 30:
		return "hostbridge"
	case 40:
		return "node"
	case 50:
		return "system"
	}
	return fmt.Sprintf("level%d", level)
}

// P2PStatusName names an nvmlGpuP2PStatus_t value.
func P2PStatusName(s int) string {
	switch s {
	case 0:
		return "ok"
	case 1:
		return "chipset-not-supported"
	case 2:
		return "gpu-not-supported"
	case 3:
		return "topology-not-supported"
	case 4:
		return "disabled-by-regkey"
	case 5:
		return "not-supported"
	}
	return "unknown"
}

// RemoteTypeName names an nvmlIntNvLinkDeviceType_t value.
func RemoteTypeName(t int) string {
	switch t {
	case 0:
		return "gpu"
	case 1:
		return "ibmnpu"
	case 2:
		return "switch"
	}
	return "unknown"
}
