package cuda

import (
	"fmt"
)

// Sonames are the CUDA runtime libraries Load tries, newest first.
var Sonames = []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11"}

// Ptr is a device or host address as the CUDA runtime returns it.
type Ptr uint64

// Stream is a cudaStream_t handle.
type Stream uintptr

// Event is a cudaEvent_t handle.
type Event uintptr

// MemcpyKind is cudaMemcpyKind.
type MemcpyKind int

// Copy directions (cudaMemcpyKind values, stable since CUDA 4).
const (
	HostToHost     MemcpyKind = 0
	HostToDevice   MemcpyKind = 1
	DeviceToHost   MemcpyKind = 2
	DeviceToDevice MemcpyKind = 3
	Default        MemcpyKind = 4
)

// Attr is a cudaDeviceAttr value.
type Attr int

// Device attributes hwbench reads (cudaDeviceAttr values, CUDA 11-13).
const (
	AttrMultiProcessorCount    Attr = 16
	AttrPCIBusID               Attr = 33
	AttrPCIDeviceID            Attr = 34
	AttrGlobalMemoryBusWidth   Attr = 37
	AttrL2CacheSize            Attr = 38
	AttrAsyncEngineCount       Attr = 40
	AttrUnifiedAddressing      Attr = 41
	AttrPCIDomainID            Attr = 50
	AttrComputeCapabilityMajor Attr = 75
	AttrComputeCapabilityMinor Attr = 76
)

// Runtime error codes hwbench treats specially.
const (
	errPeerAccessAlreadyEnabled = 704
	errPeerAccessNotEnabled     = 705
)

// Error is a failed CUDA runtime call.
type Error struct {
	// Op is the runtime function, e.g. "cudaMalloc".
	Op string
	// Code is the cudaError_t value.
	Code int
	// Name and Msg are cudaGetErrorName and cudaGetErrorString of Code.
	Name, Msg string
}

func (e *Error) Error() string {
	if e.Name == "" && e.Msg == "" {
		return fmt.Sprintf("cuda: %s: error %d", e.Op, e.Code)
	}
	return fmt.Sprintf("cuda: %s: %s (%s=%d)", e.Op, e.Msg, e.Name, e.Code)
}

// VersionString formats a CUDA version number as the runtime reports it
// (1000*major + 10*minor, e.g. 12040) as "12.4"; 0 gives "".
func VersionString(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}
