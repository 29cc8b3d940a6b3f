/* A stand-in CUDA runtime (libcudart) and driver (libcuda) for the
 * binding's tests: built with the system C compiler during the test and
 * loaded with dlopen. The driver functions check the arguments the binding
 * passes (handle type, flags, PTX, launch shape, kernel parameters) and
 * record them for the test to read back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int current = -1;
int cudaSetDevice(int d) { current = d; return 0; }
int cudaFree(void *p) { (void)p; return 0; }
int cudaFreeHost(void *p) { free(p); return 0; }
const char *cudaGetErrorString(int e) { (void)e; return "fake error"; }
const char *cudaGetErrorName(int e) { (void)e; return "cudaErrorFake"; }
unsigned int last_host_alloc_flags;
int cudaHostAlloc(void **p, size_t n, unsigned int flags) {
	last_host_alloc_flags = flags;
	*p = calloc(1, n ? n : 1);
	return *p ? 0 : 2;
}
int cudaHostGetDevicePointer(void **d, void *h, unsigned int flags) {
	if (flags != 0) return 1;
	*d = (void *)((uintptr_t)h + 0x1000000000ull); /* a distinct "device" address */
	return 0;
}
#ifdef FAKE_DEVICE_COUNT_ERROR
/* A runtime newer than the driver: cudaErrorInsufficientDriver (35). */
int cudaGetDeviceCount(int *n) { *n = 0; return FAKE_DEVICE_COUNT_ERROR; }
#else
int cudaGetDeviceCount(int *n) { *n = 2; return 0; }
#endif
int cudaDeviceGetAttribute() { return 0; }
int cudaDeviceGetPCIBusId() { return 0; }
int cudaDeviceCanAccessPeer() { return 0; }
int cudaDeviceEnablePeerAccess() { return 0; }
int cudaDeviceDisablePeerAccess() { return 0; }
int cudaDeviceSynchronize() { return 0; }
int cudaMemGetInfo() { return 0; }
int cudaMalloc() { return 0; }
int cudaMallocHost() { return 0; }
int cudaMemset() { return 0; }
int cudaMemcpy() { return 0; }
int cudaMemcpyAsync() { return 0; }
int cudaMemcpyPeerAsync() { return 0; }
int cudaStreamCreateWithFlags() { return 0; }
int cudaStreamDestroy() { return 0; }
int cudaStreamSynchronize() { return 0; }
int cudaStreamWaitEvent() { return 0; }
int cudaEventCreateWithFlags() { return 0; }
int cudaEventRecord() { return 0; }
int cudaEventSynchronize() { return 0; }
int cudaEventElapsedTime() { return 0; }
int cudaEventDestroy() { return 0; }
int cudaDriverGetVersion() { return 0; }
int cudaRuntimeGetVersion() { return 0; }
int cudaGetLastError() { return 0; }

/* Driver API. */
int cuInit(unsigned int f) { return f == 0 ? 0 : 1; }
int cuDeviceGet(int *d, int ordinal) { *d = 100 + ordinal; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) {
	if (dev < 100) return 101; /* CUDA_ERROR_INVALID_DEVICE: not a CUdevice */
	*v = (attr == 124 && dev == 100) ? 1 : 0; /* DMA_BUF_SUPPORTED on device 0 only */
	return 0;
}
int cuGetErrorString(int e, const char **s) { (void)e; *s = "fake driver error"; return 0; }
unsigned long long last_range_ptr; size_t last_range_size;
int cuMemGetHandleForAddressRange(void *handle, unsigned long long ptr, size_t size, int type, unsigned long long flags) {
	if (type != 1 || flags != 0) return 1; /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, no flags */
	if (ptr % 4096 || size % 4096) return 1; /* page-aligned range */
	last_range_ptr = ptr; last_range_size = size;
	*(int *)handle = 77;
	return 0;
}
int module_ok;
int cuModuleLoadData(void **mod, const void *image) {
	const char *ptx = image;
	module_ok = strstr(ptx, ".entry hb_delay(") != NULL && strstr(ptx, ".target sm_52") != NULL && current >= 0;
	*mod = (void *)0x10;
	return module_ok ? 0 : 218; /* CUDA_ERROR_INVALID_PTX */
}
int cuModuleGetFunction(void **fn, void *mod, const char *name) {
	if (mod != (void *)0x10 || strcmp(name, "hb_delay") != 0) return 500;
	*fn = (void *)0x20;
	return 0;
}
unsigned long long launch_flag, launch_timeout; void *launch_stream; int launches;
int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
                   unsigned int shmem, void *stream, void **params, void **extra) {
	if (f != (void *)0x20 || gx != 1 || gy != 1 || gz != 1 || bx != 1 || by != 1 || bz != 1 || shmem != 0 || extra != NULL) return 1;
	launch_flag = *(unsigned long long *)params[0];
	launch_timeout = *(unsigned long long *)params[1];
	launch_stream = stream;
	launches++;
	return 0;
}
