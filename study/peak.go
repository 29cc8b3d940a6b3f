package study

import (
	"fmt"
	"strings"

	"github.com/collsim/collsim/model"
)

// peakRow is one GPU's dense (no structured sparsity) tensor-core peak in
// TFLOP/s per datatype, with its source; 0 means the datatype is not
// supported at speed.
type peakRow struct {
	bf16, fp16, fp8, tf32, fp32 float64
	source                      string
}

// gpuPeaks are the catalog GPUs' dense peaks, from NVIDIA's datasheets
// (the sparsity figures the datasheets print first are halved).
var gpuPeaks = map[string]peakRow{
	"V100-SXM2":  {0, 125, 0, 0, 15.7, "NVIDIA V100 datasheet: 125 TFLOPS tensor (fp16), 15.7 fp32"},
	"A100-SXM4":  {312, 312, 0, 156, 19.5, "NVIDIA A100 datasheet: 312 TFLOPS bf16/fp16 dense, 156 tf32, 19.5 fp32"},
	"A100-PCIE":  {312, 312, 0, 156, 19.5, "NVIDIA A100 PCIe datasheet: 312 TFLOPS bf16/fp16 dense, 156 tf32, 19.5 fp32"},
	"H100-SXM":   {989, 989, 1979, 494, 67, "NVIDIA H100 datasheet (SXM): 989 TFLOPS bf16 dense, 1979 fp8, 494 tf32, 67 fp32"},
	"H100-PCIE":  {756, 756, 1513, 378, 51, "NVIDIA H100 datasheet (PCIe): 756 TFLOPS bf16 dense, 1513 fp8, 378 tf32, 51 fp32"},
	"H200-SXM":   {989, 989, 1979, 494, 67, "NVIDIA H200 datasheet: 989 TFLOPS bf16 dense, 1979 fp8 (same compute as H100 SXM)"},
	"H200-NVL":   {836, 836, 1671, 418, 60, "NVIDIA H200 NVL datasheet: 1,671 TFLOPS bf16 and 3,341 fp8 with sparsity (half dense), 835 tf32 with sparsity, 60 fp32"},
	"H800-SXM":   {989, 989, 1979, 494, 67, "H800: H100 SXM compute with capped NVLink (NVIDIA H800 product brief)"},
	"B200":       {2250, 2250, 4500, 1100, 75, "NVIDIA HGX B200 datasheet: 2.25 PFLOPS bf16 dense per GPU, 4.5 fp8"},
	"GB200":      {2500, 2500, 5000, 1250, 80, "NVIDIA GB200 NVL72 datasheet: 2.5 PFLOPS bf16 dense per GPU, 5 fp8"},
	"L40S":       {362, 362, 733, 183, 91.6, "NVIDIA L40S datasheet: 362 TFLOPS bf16 dense, 733 fp8, 183 tf32, 91.6 fp32"},
	"L40":        {181, 181, 362, 90.5, 90.5, "NVIDIA L40 datasheet: 181 TFLOPS bf16 dense (362 with sparsity), 362 fp8, 90.5 tf32, 90.5 fp32"},
	"RTX-4090":   {165, 165, 330, 82.6, 82.6, "NVIDIA Ada architecture white paper (RTX 4090): 165 TFLOPS fp16/bf16 tensor dense with fp32 accumulate (GeForce rate), 82.6 fp32"},
	"RTX-2080TI": {0, 53.8, 0, 0, 13.4, "NVIDIA Turing architecture white paper (RTX 2080 Ti): 53.8 TFLOPS fp16 tensor with fp32 accumulate (GeForce rate), 13.4 fp32"},
}

// PeakFLOPS returns the dense peak of gpu for dtype (bf16, fp16, fp8,
// tf32, fp32) in FLOP/s and its source; an error names the GPU and the
// datatypes it has when the pair is unknown or unsupported.
func PeakFLOPS(gpu model.GPUModel, dtype string) (float64, string, error) {
	r, ok := gpuPeaks[gpu.Name]
	if !ok {
		return 0, "", fmt.Errorf("no peak FLOP/s for GPU %s in the catalog; give compute_ms (a measured step time)", gpu.Name)
	}
	vals := map[string]float64{"bf16": r.bf16, "fp16": r.fp16, "fp8": r.fp8, "tf32": r.tf32, "fp32": r.fp32}
	v, ok := vals[strings.ToLower(dtype)]
	if !ok || v == 0 {
		var have []string
		for _, k := range []string{"bf16", "fp16", "fp8", "tf32", "fp32"} {
			if vals[k] > 0 {
				have = append(have, k)
			}
		}
		return 0, "", fmt.Errorf("dtype.compute: %s has no %s tensor-core rate (has: %s)", gpu.Name, dtype, strings.Join(have, ", "))
	}
	return v * 1e12, r.source, nil
}
