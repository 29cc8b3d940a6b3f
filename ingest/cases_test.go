package ingest

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// corpusCase is the part of an entry of testdata/cases.yaml (a copy of
// shared/data/cases.yaml) that the parsers must reproduce.
type corpusCase struct {
	ID         string       `yaml:"id"`
	File       string       `yaml:"file"`
	TableIndex int          `yaml:"table_index_in_file"`
	TotalRanks int          `yaml:"total_ranks"`
	Collective string       `yaml:"collective"`
	DType      string       `yaml:"dtype"`
	Points     [][2]float64 `yaml:"points"`
}

// TestCasesYAML cross-checks every case of cases.yaml: the out-of-place
// busbw of each size of the table (size-0 rows dropped, the first row of
// each size kept, as cases.yaml's header says), the rank count, the
// collective and the element type.
func TestCasesYAML(t *testing.T) {
	b, err := os.ReadFile("testdata/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []corpusCase `yaml:"cases"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 10 {
		t.Fatalf("only %d cases read", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		t.Run(c.ID, func(t *testing.T) {
			// c.File is relative to shared/data ("raw/x.txt"), testdata mirrors it.
			a, err := ParseFile(filepath.Join("testdata", c.File))
			if err != nil {
				t.Fatal(err)
			}
			if c.TableIndex >= len(a.Runs) {
				t.Fatalf("table %d of %d", c.TableIndex, len(a.Runs))
			}
			r := a.Runs[c.TableIndex]
			if r.Ranks != c.TotalRanks || r.CollectiveName != c.Collective || r.DType != c.DType {
				t.Errorf("ranks %d collective %s dtype %s; want %d %s %s", r.Ranks, r.CollectiveName, r.DType, c.TotalRanks, c.Collective, c.DType)
			}
			var got [][2]float64
			seen := map[int64]bool{}
			for _, row := range r.Rows {
				if row.Size == 0 || seen[row.Size] {
					continue
				}
				seen[row.Size] = true
				got = append(got, [2]float64{float64(row.Size), row.OOP.BusBW})
			}
			if len(got) != len(c.Points) {
				t.Fatalf("%d points, cases.yaml has %d", len(got), len(c.Points))
			}
			for i, p := range c.Points {
				if got[i][0] != p[0] || math.Abs(got[i][1]-p[1]) > 1e-9 {
					t.Errorf("point %d = %v, cases.yaml %v", i, got[i], p)
				}
			}
		})
	}
}
