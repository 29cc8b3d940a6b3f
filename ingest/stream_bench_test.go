package ingest

import (
	"bytes"
	"os"
	"path/filepath"
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
// log. Run with
//
//	go test ./ingest -run '^$' -bench ParseLargeLog -benchtime 1x -benchmem
//
// It reports MB/s (b.SetBytes) and allocations per parse.
func BenchmarkParseLargeLog(b *testing.B) {
	data := bigLog(b, 50<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := Parse("big.log", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Runs) == 0 {
			b.Fatal("no runs")
		}
	}
}
