/* fakecuda.c as a CUDA runtime the installed driver is too old for:
 * cudaGetDeviceCount fails with cudaErrorInsufficientDriver. */
#define FAKE_DEVICE_COUNT_ERROR 35
#include "fakecuda.c"
