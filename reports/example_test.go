package reports_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
)

// exampleDoc is what a command such as "collsim predict" might build.
func exampleDoc() *reports.Document {
	var pts []reports.BWPoint
	for s := model.Bytes(1 << 10); s <= 1<<30; s *= 8 {
		// busbw = 360 GB/s * s/(s + 8 MiB): an illustrative curve.
		pts = append(pts, reports.BWPoint{Size: s, BusBW: model.GBps(360 * float64(s) / float64(s+8*model.MiB))})
	}
	return &reports.Document{
		Title:       "Predict: AllReduce on 8x H100",
		Date:        time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC),
		Version:     "v0.3.0",
		CommandLine: []string{"collsim", "predict", "--report", "predict.html"},
		Summary:     "AllReduce reaches 359 GB/s busbw at 1G; NVLink is the bottleneck.",
		Verdict:     &reports.Verdict{Status: reports.StatusInfo, Label: "prediction only"},
		Inputs:      []reports.KV{{Key: "cluster", Value: "1x DGX H100"}},
		Sections: []reports.Section{{
			Title: "Bandwidth",
			Blocks: []reports.Block{
				reports.Paragraph{Text: "Predicted bus bandwidth per message size."},
				reports.BusBWPlot{
					Title:  "AllReduce busbw",
					Series: []reports.BWSeries{{Name: "model", Points: pts}},
				},
			},
		}},
	}
}

func ExampleWriteHTML() {
	var buf bytes.Buffer
	if err := reports.WriteHTML(&buf, exampleDoc()); err != nil {
		log.Fatal(err)
	}
	page := buf.String()
	fmt.Println(strings.Contains(page, "<title>Predict: AllReduce on 8x H100</title>"))
	fmt.Println("inline plots:", strings.Count(page, "<svg "))
	fmt.Println("data tables:", strings.Count(page, "<details>"))
	fmt.Println("scripts:", strings.Count(page, "<script"))
	// Output:
	// true
	// inline plots: 1
	// data tables: 1
	// scripts: 0
}

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "collsim-report")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The extension picks the format; Markdown gets its plots beside it.
	for _, name := range []string{"predict.html", "predict.md"} {
		if err := reports.WriteFile(filepath.Join(dir, name), exampleDoc()); err != nil {
			log.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".svg") {
			// predict-fig01-allreduce-busbw-<8 hex digits of SHA-256>.svg
			name = name[:len(name)-len("01234567.svg")] + "<hash>.svg"
		}
		fmt.Println(name)
	}

	err = reports.WriteFile(filepath.Join(dir, "predict.pdf"), exampleDoc())
	fmt.Println(err != nil)
	// Output:
	// predict-fig01-allreduce-busbw-<hash>.svg
	// predict.html
	// predict.md
	// true
}
