package cuda

import "fmt"

// DriverSonames are the CUDA driver libraries LoadDriver tries.
var DriverSonames = []string{"libcuda.so.1"}

// Driver API constants (cuda.h).
const (
	// AttrDMABufSupported is CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED.
	AttrDMABufSupported = 124
	// RangeHandleDMABufFD is CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, the
	// handle type of cuMemGetHandleForAddressRange (CUDA 11.7+).
	RangeHandleDMABufFD = 0x1
)

// DriverError is a failed CUDA driver API call.
type DriverError struct {
	// Op is the driver function, e.g. "cuMemGetHandleForAddressRange".
	Op string
	// Code is the CUresult value; Msg is cuGetErrorString's text.
	Code int
	Msg  string
}

func (e *DriverError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("cuda: %s: CUresult %d", e.Op, e.Code)
	}
	return fmt.Sprintf("cuda: %s: %s (CUresult %d)", e.Op, e.Msg, e.Code)
}

// DelayPTX is the spin kernel the P2P latency measurement queues ahead of
// its copies, after the method of CUDA's p2pBandwidthLatencyTest: one
// thread spins on a flag in mapped host memory until the host sets it or
// timeout clock cycles pass, so the copies queued behind it start together
// and the events time only them, not their issue. It is PTX ISA 7.0 for
// sm_52, which every driver since CUDA 11.0 compiles (JIT) for its GPU.
const DelayPTX = `.version 7.0
.target sm_52
.address_size 64

.visible .entry hb_delay(
	.param .u64 hb_delay_flag,
	.param .u64 hb_delay_timeout
)
{
	.reg .pred %p<3>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<7>;

	ld.param.u64 %rd1, [hb_delay_flag];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u64 %rd3, [hb_delay_timeout];
	mov.u64 %rd4, %clock64;
SPIN:
	ld.volatile.global.u32 %r1, [%rd2];
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra DONE;
	mov.u64 %rd5, %clock64;
	sub.s64 %rd6, %rd5, %rd4;
	setp.lt.s64 %p2, %rd6, %rd3;
	@%p2 bra SPIN;
DONE:
	ret;
}
`

// DelayKernelName is the entry point of DelayPTX.
const DelayKernelName = "hb_delay"
