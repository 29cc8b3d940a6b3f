package hwbench

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/collsim/collsim/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata (and ingest/testdata/hwbench_fake.*)")

// The fixture is what the probes write for the default fake machine (4 x
// H100 on NVSwitch, 2 NDR NICs) with small settings: the report and its
// nccl-tests text. ingest's tests read a copy of the report, so its
// converter is tested against what hwbench really writes.
const (
	fixtureJSON      = "testdata/hwbench_fake.json"
	fixtureText      = "testdata/hwbench_fake.json.nccl-tests.txt"
	calibrateFixture = "../ingest/testdata/hwbench_fake.json"
	calibrateText    = "../ingest/testdata/hwbench_fake.nccl-tests.txt"
)

func fixtureRun(t *testing.T) (report, text []byte) {
	t.Helper()
	dir := t.TempDir()
	o := fakeOptions(dir)
	o.Tool = "collsim hwbench 0.1.0"
	o.MaxBytes = 16 * model.MiB
	o.StepFactor = 4
	o.CopyBytes = 16 * model.MiB
	o.Check = 1
	if _, err := Run(context.Background(), NewFake(FakeConfig{}), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	report, err := os.ReadFile(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	text, err = os.ReadFile(o.NCCLText)
	if err != nil {
		t.Fatal(err)
	}
	return report, text
}

func TestFakeFixture(t *testing.T) {
	report, text := fixtureRun(t)
	if !testing.Short() {
		// Determinism: the same run twice gives the same bytes.
		report2, text2 := fixtureRun(t)
		if !bytes.Equal(report, report2) || !bytes.Equal(text, text2) {
			t.Fatal("two runs on the fake differ")
		}
	}
	files := map[string][]byte{fixtureJSON: report, fixtureText: text, calibrateFixture: report, calibrateText: text}
	if *update {
		for name, data := range files {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, data := range files {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v (run go test ./hwbench -run TestFakeFixture -update)", err)
		}
		if !bytes.Equal(data, want) {
			t.Errorf("%s differs from what the probes write now; rerun with -update and review the diff", name)
		}
	}
}
