package hwbench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collsim/collsim/model"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRanksFromEnvLaunchers(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		want   RankInfo
		ok     bool
		errSub string
	}{
		{"slurm srun", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "3"}, RankInfo{3, 8, "SLURM"}, true, ""},
		{"salloc shell is no task", map[string]string{"SLURM_NTASKS": "8"}, RankInfo{}, false, ""},
		{"open mpi", map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "16"}, RankInfo{5, 16, "Open MPI"}, true, ""},
		{"torchrun", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}, RankInfo{1, 2, "torchrun"}, true, ""},
		{"slurm wins over torchrun", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "RANK": "1", "WORLD_SIZE": "2"}, RankInfo{0, 2, "SLURM"}, true, ""},
		{"malformed", map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, RankInfo{}, false, `RANK="x"`},
		{"none", map[string]string{}, RankInfo{}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := RanksFromEnv(envOf(tc.env))
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil || ok != tc.ok || got != tc.want {
				t.Errorf("RanksFromEnv = %+v, %v, %v; want %+v, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestPickGPU(t *testing.T) {
	four := []DeviceInfo{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}
	one := []DeviceInfo{{Index: 0, BusID: "0000:9a:00.0"}}
	tests := []struct {
		name      string
		devs      []DeviceInfo
		bootLocal int
		env       map[string]string
		want      int
		how       string
		errSub    string
	}{
		// Slurm --gpus-per-task=1: every task sees one GPU as device 0,
		// whatever its local id.
		{"slurm one gpu per task", one, 3, map[string]string{"SLURM_LOCALID": "3"}, 0, "the only visible GPU", ""},
		{"kubernetes one gpu per container", one, 1, nil, 0, "the only visible GPU", ""},
		{"slurm all gpus visible", four, 0, map[string]string{"SLURM_LOCALID": "2"}, 2, "SLURM_LOCALID=2 of 4", ""},
		{"open mpi", four, 0, map[string]string{"OMPI_COMM_WORLD_LOCAL_RANK": "3"}, 3, "OMPI_COMM_WORLD_LOCAL_RANK=3", ""},
		{"torchrun", four, 0, map[string]string{"LOCAL_RANK": "1"}, 1, "LOCAL_RANK=1", ""},
		{"no launcher: host name order", four, 2, nil, 2, "by host name", ""},
		{"local id beyond the GPUs", four, 0, map[string]string{"SLURM_LOCALID": "4"}, 0, "", "SLURM_LOCALID=4 but this process sees only 4 GPUs"},
		{"bad local id", four, 0, map[string]string{"LOCAL_RANK": "-1"}, 0, "", `LOCAL_RANK="-1"`},
		{"no gpu", nil, 0, nil, 0, "", "no GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, how, err := pickGPU(tc.devs, tc.bootLocal, envOf(tc.env))
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil || d.Index != tc.want || !strings.Contains(how, tc.how) {
				t.Errorf("pickGPU = %d (%q), %v; want %d (%q)", d.Index, how, err, tc.want, tc.how)
			}
		})
	}
}

// runRanks runs one fake per rank as goroutines meeting at a bootstrap on
// 127.0.0.1, with each rank's environment from envs.
func runRanks(t *testing.T, fakes []*Fake, envs []map[string]string, probes []string) ([]*Report, []error) {
	t.Helper()
	return runRanksWith(t, fakes, envs, probes, nil)
}

// runRanksWith is runRanks with a change to every rank's options.
func runRanksWith(t *testing.T, fakes []*Fake, envs []map[string]string, probes []string, edit func(*Options)) ([]*Report, []error) {
	t.Helper()
	return runRanksIn(t, t.TempDir(), fakes, envs, probes, edit)
}

// runRanksIn is runRanksWith writing every rank's output under dir.
func runRanksIn(t *testing.T, dir string, fakes []*Fake, envs []map[string]string, probes []string, edit func(*Options)) ([]*Report, []error) {
	t.Helper()
	coord := freeAddr(t)
	n := len(fakes)
	reps, errs := make([]*Report, n), make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for r := range fakes {
		o := fakeOptions(dir)
		o.MaxBytes = 4 * model.KiB
		o.CopyBytes = model.MiB
		o.Probes = probes
		o.Rank, o.NRanks, o.Coordinator = r, n, coord
		if envs != nil {
			o.Getenv = envOf(envs[r])
		}
		if edit != nil {
			edit(&o)
		}
		wg.Add(1)
		go func(r int, o Options) {
			defer wg.Done()
			reps[r], errs[r] = Run(ctx, fakes[r], o)
		}(r, o)
	}
	wg.Wait()
	return reps, errs
}

// TestRunLauncherBinding runs two ranks on one host under each launcher's
// environment and checks the GPU every rank drives.
func TestRunLauncherBinding(t *testing.T) {
	tests := []struct {
		name string
		gpus int
		envs []map[string]string
		devs []int
		how  string
	}{
		// The launcher's local ids, not the host-name order, decide: here
		// they are crossed on purpose.
		{"slurm", 4, []map[string]string{{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "1"}, {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0"}}, []int{1, 0}, "SLURM_LOCALID"},
		{"open mpi", 4, []map[string]string{{"OMPI_COMM_WORLD_LOCAL_RANK": "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK": "2"}}, []int{3, 2}, "OMPI_COMM_WORLD_LOCAL_RANK"},
		{"torchrun", 4, []map[string]string{{"LOCAL_RANK": "0"}, {"LOCAL_RANK": "1"}}, []int{0, 1}, "LOCAL_RANK"},
		// One visible GPU per process (--gpus-per-task=1): rank 1 used to
		// fail with "only 1 GPUs".
		{"one visible gpu", 1, []map[string]string{{"SLURM_LOCALID": "0"}, {"SLURM_LOCALID": "1"}}, []int{0, 0}, "the only visible GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewFakeWorld()
			fakes := []*Fake{NewFake(FakeConfig{Hostname: "alpha", GPUs: tc.gpus, NICs: -1, World: w}), NewFake(FakeConfig{Hostname: "alpha", GPUs: tc.gpus, NICs: -1, World: w})}
			reps, errs := runRanks(t, fakes, tc.envs, []string{"nccl"})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			ds := reps[0].NCCL.Devices
			if len(ds) != 2 {
				t.Fatalf("devices %+v", ds)
			}
			for r, want := range tc.devs {
				if ds[r].Device != want || !strings.Contains(ds[r].Choice, tc.how) {
					t.Errorf("rank %d: device %d (%q), want %d (%q)", r, ds[r].Device, ds[r].Choice, want, tc.how)
				}
			}
		})
	}
}

// TestP2PLatencyMethod checks the latency method on a fake whose host takes
// 5 us to issue each call while a 4-byte copy takes about 2 us: with the
// spin kernel the copies run back to back and the matrix shows the copy
// latency; without it (no kernel could be loaded) the figure is the issue
// cost, and the result says which method it used.
func TestP2PLatencyMethod(t *testing.T) {
	issue := 5 * time.Microsecond
	for _, tc := range []struct {
		name   string
		noSpin bool
		method string
		want   float64 // us
	}{
		{"spin kernel", false, "spin-kernel", fakeCopyLatency.Seconds()*1e6 + 4/(fakeP2PNVLink*1e3)},
		{"fallback", true, "back-to-back", issue.Seconds() * 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t.TempDir())
			o.Probes = []string{"p2p"}
			o.CopyBytes = model.MiB
			rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 2, IssueCost: issue, NoSpinKernel: tc.noSpin}), o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			p := rep.P2P
			if p.LatencyMethod != tc.method || (tc.noSpin != (p.LatencyNote != "")) {
				t.Errorf("method %q note %q, want %q", p.LatencyMethod, p.LatencyNote, tc.method)
			}
			lat := p.Matrices[5] // P2P=Enabled latency
			if got := float64(lat.Values[0][1]); !near(got, tc.want, 0.02) {
				t.Errorf("latency 0->1 = %.3f us, want %.3f", got, tc.want)
			}
		})
	}
}
