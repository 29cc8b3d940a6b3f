package hwbench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteNCCLTests writes the sweeps of res as nccl-tests prints them (the
// 2.17+ layout of nccl-facts §1.3: header block, device lines, the
// two-group table with #wrong, the out-of-bounds and average-bus-bandwidth
// footer, one block per collective), so that collsim's nccl-tests parser
// and a plain diff read it like nccl-tests output. Validation is off, so
// #wrong is the data check's count (N/A where nothing was checked). The first lines are comments saying that collsim wrote
// the file and with which NCCL, CUDA and driver. tool is printed in them
// ("collsim hwbench 0.1.0").
func WriteNCCLTests(w io.Writer, res *NCCLResult, tool string) error {
	bw := bufio.NewWriter(w)
	m := res.Machine
	for i, sw := range res.Sweeps {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "# %s: nccl-tests text layout; times from CUDA events (%s)\n", tool, res.Mode)
		var vers []string
		for _, kv := range [][2]string{{"NCCL version", m.NCCL}, {"CUDA runtime", m.CUDARuntime}, {"CUDA driver", m.CUDADriver}, {"driver", m.Driver}} {
			if kv[1] != "" {
				vers = append(vers, kv[0]+" "+kv[1])
			}
		}
		if len(vers) > 0 {
			fmt.Fprintf(bw, "# %s\n", strings.Join(vers, ", "))
		}
		fmt.Fprintf(bw, "# Collective test starting: %s\n", sw.Test)
		nGpus := res.Ranks
		if res.Mode == "multi-process" {
			nGpus = 1
		}
		fmt.Fprintf(bw, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n",
			nGpus, res.MinBytes, res.MaxBytes, res.StepFactor, res.Warmup, res.Iters, res.Check)
		fmt.Fprintln(bw, "#")
		fmt.Fprintln(bw, "# Using devices")
		for _, d := range res.Devices {
			fmt.Fprintf(bw, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", d.Rank, d.Pid, d.Host, d.Device, shortBusID(d.BusID), d.Name)
		}
		fmt.Fprintln(bw, "#")
		fmt.Fprintln(bw, "#                                                              out-of-place                       in-place          ")
		fmt.Fprintln(bw, "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ")
		fmt.Fprintln(bw, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ")
		for _, row := range sw.Rows {
			fmt.Fprintf(bw, "%12d  %12d  %8s  %6s  %6d", row.Size, row.Count, res.DType, sw.Redop, sw.Root)
			for _, t := range []Timing{row.OOP, row.IP} {
				wrong := "N/A"
				if t.Wrong != nil {
					wrong = strconv.FormatInt(*t.Wrong, 10)
				}
				fmt.Fprintf(bw, "  %7s  %6s  %6s  %6s", fitNum(float64(t.TimeUs), 7), fitNum(float64(t.AlgBW), 6), fitNum(float64(t.BusBW), 6), wrong)
			}
			fmt.Fprintln(bw)
		}
		if sw.Wrong > 0 {
			fmt.Fprintf(bw, "# Out of bounds values : %d FAILED\n", sw.Wrong)
		} else {
			fmt.Fprintln(bw, "# Out of bounds values : 0 OK")
		}
		fmt.Fprintf(bw, "# Avg bus bandwidth    : %s \n", strconv.FormatFloat(float64(sw.AvgBusBW), 'g', 6, 64))
		fmt.Fprintln(bw, "#")
		fmt.Fprintf(bw, "# Collective test concluded: %s\n", sw.Test)
	}
	return bw.Flush()
}

// shortBusID prints "0000:18:00.0" as nccl-tests does, "0000:18:00"
// (domain:bus:device).
func shortBusID(s string) string {
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		s = s[:i]
	}
	if s == "" {
		return "0000:00:00"
	}
	return s
}

// fitNum prints v in width characters the way nccl-tests does: two
// decimals, then one, then none, then %.1e, whichever fits first. NaN
// prints as "nan".
func fitNum(v float64, width int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "nan"
	}
	for _, prec := range []int{2, 1, 0} {
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if len(s) <= width {
			return s
		}
	}
	return strconv.FormatFloat(v, 'e', 1, 64)
}
