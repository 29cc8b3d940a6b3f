package hwbench

import (
	"fmt"
	"strconv"
)

// RankInfo places this process in a multi-process run.
type RankInfo struct {
	Rank, NRanks int
	// Source says where the numbers came from ("SLURM", "Open MPI",
	// "torchrun").
	Source string
}

// rankEnvs are the launcher variables RanksFromEnv and LocalRankFromEnv
// read, in order: Slurm (srun), Open MPI (mpirun), and torchrun/torch
// elastic, which sets RANK, WORLD_SIZE and LOCAL_RANK.
var rankEnvs = []struct{ source, rank, size, local string }{
	{"SLURM", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
}

// RanksFromEnv reads the rank and the rank count a launcher set:
// SLURM_PROCID and SLURM_NTASKS, else OMPI_COMM_WORLD_RANK and
// OMPI_COMM_WORLD_SIZE, else RANK and WORLD_SIZE (torchrun). ok is false
// when no pair is set in full; a pair that is set but malformed is an
// error.
func RanksFromEnv(getenv func(string) string) (RankInfo, bool, error) {
	for _, e := range rankEnvs {
		rs, ns := getenv(e.rank), getenv(e.size)
		if rs == "" || ns == "" {
			// An salloc shell has SLURM_NTASKS but no SLURM_PROCID: not a task.
			continue
		}
		rank, err1 := strconv.Atoi(rs)
		n, err2 := strconv.Atoi(ns)
		if err1 != nil || err2 != nil || n < 1 || rank < 0 || rank >= n {
			return RankInfo{}, false, fmt.Errorf("hwbench: %s=%q and %s=%q are not a rank and a rank count", e.rank, rs, e.size, ns)
		}
		return RankInfo{Rank: rank, NRanks: n, Source: e.source}, true, nil
	}
	return RankInfo{}, false, nil
}

// LocalRankFromEnv reads this process's rank among the processes of its
// node as the launcher set it: SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK or
// LOCAL_RANK (torchrun), the first that is set. name is the variable read;
// ok is false when none is set; a value that is not a non-negative integer
// is an error.
func LocalRankFromEnv(getenv func(string) string) (local int, name string, ok bool, err error) {
	for _, e := range rankEnvs {
		s := getenv(e.local)
		if s == "" {
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, e.local, false, fmt.Errorf("hwbench: %s=%q is not a local rank", e.local, s)
		}
		return v, e.local, true, nil
	}
	return 0, "", false, nil
}

// pickGPU chooses the GPU one rank of a multi-process run drives, as the
// launchers bind them: when the process sees a single GPU (Slurm
// --gpus-per-task=1 or --gpu-bind, one GPU per container) that one;
// otherwise the local rank the launcher set (LocalRankFromEnv); otherwise
// bootLocal, the rank's position among the ranks with its host name. how
// says which rule chose.
func pickGPU(devs []DeviceInfo, bootLocal int, getenv func(string) string) (dev DeviceInfo, how string, err error) {
	switch len(devs) {
	case 0:
		return DeviceInfo{}, "", fmt.Errorf("no GPU")
	case 1:
		return devs[0], "the only visible GPU", nil
	}
	local, name, ok, err := LocalRankFromEnv(getenv)
	if err != nil {
		return DeviceInfo{}, "", err
	}
	if ok {
		if local >= len(devs) {
			return DeviceInfo{}, "", fmt.Errorf("%s=%d but this process sees only %d GPUs", name, local, len(devs))
		}
		return devs[local], fmt.Sprintf("%s=%d of %d visible GPUs", name, local, len(devs)), nil
	}
	if bootLocal >= len(devs) {
		return DeviceInfo{}, "", fmt.Errorf("local rank %d (by host name) but this process sees only %d GPUs", bootLocal, len(devs))
	}
	return devs[bootLocal], fmt.Sprintf("local rank %d by host name of %d visible GPUs", bootLocal, len(devs)), nil
}
