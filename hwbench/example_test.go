package hwbench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/collsim/collsim/hwbench"
	"github.com/collsim/collsim/model"
)

// Run the nccl probe on the simulated machine and read the largest
// AllReduce row. On real hardware, hwbench.Open() gives the backend.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "hwbench-example")
	defer os.RemoveAll(dir)
	o := hwbench.DefaultOptions()
	o.Probes = []string{"nccl"}
	o.Out = filepath.Join(dir, "hwbench.json")
	o.MinBytes, o.MaxBytes = model.MiB, 64*model.MiB
	o.Check = 0 // timing only, as nccl-tests -c 0
	o.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	rep, err := hwbench.Run(context.Background(), hwbench.NewFake(hwbench.FakeConfig{GPUs: 8}), o)
	if err != nil {
		fmt.Println(err)
		return
	}
	ar := rep.NCCL.Sweeps[0]
	last := ar.Rows[len(ar.Rows)-1]
	fmt.Printf("%s on %d ranks, %d bytes: busbw %.0f GB/s\n", ar.Test, rep.NCCL.Ranks, last.Size, float64(last.OOP.BusBW))
	// Output: all_reduce_perf on 8 ranks, 67108864 bytes: busbw 347 GB/s
}

// The sizes of nccl-tests -b 8 -e 1K -f 4.
func ExampleSweepSizes() {
	fmt.Println(hwbench.SweepSizes(8, model.KiB, 4))
	// Output: [8 32 128 512]
}
