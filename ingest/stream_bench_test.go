package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// bigLog builds an input of about size bytes by repeating a real nccl-tests
// run with its NCCL_DEBUG=INFO lines (testdata/raw, from the Snellius 2x4
// H100 measurement in shared/data): many results tables, many log lines.
func bigLog(tb testing.TB, size int) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "raw", "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	var buf bytes.Buffer
	buf.Grow(size + len(b))
	for buf.Len() < size {
		buf.Write(b)
	}
	return buf.Bytes()
}

// BenchmarkParseLargeLog parses a generated ~50 MB nccl-tests + NCCL_DEBUG
// log from a file. Run with
//
//	go test ./ingest -run '^$' -bench ParseLargeLog -benchtime 1x -benchmem
//
// It reports MB/s (b.SetBytes), allocations per parse, and peak-heap-MB:
// the most heap in use above the starting point while one more parse runs
// (sampled through Options.Progress every ProgressStep bytes), which stays
// near the size of the records kept (connections are capped at
// maxConnections), and kept-heap-MB, the heap the returned Artifact holds.
func BenchmarkParseLargeLog(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.log")
	data := bigLog(b, 50<<20)
	size := int64(len(data))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	data = nil
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := ParseFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Runs) == 0 {
			b.Fatal("no runs")
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	a, err := ParseFileWith(path, Options{Progress: func(read, total int64) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	kept := ms.HeapInuse
	runtime.KeepAlive(a)
	b.ReportMetric(float64(peak-base)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(kept-base)/1e6, "kept-heap-MB")
}
