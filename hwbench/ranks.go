package hwbench

import (
	"fmt"
	"strconv"
)

// RankInfo places this process in a multi-process run.
type RankInfo struct {
	Rank, NRanks int
	// Source says where the numbers came from ("SLURM", "Open MPI").
	Source string
}

// rankEnvs are the launcher variables RanksFromEnv reads, in order.
var rankEnvs = []struct{ source, rank, size string }{
	{"SLURM", "SLURM_PROCID", "SLURM_NTASKS"},
	{"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
}

// RanksFromEnv reads the rank and the rank count a launcher set:
// SLURM_PROCID and SLURM_NTASKS, else OMPI_COMM_WORLD_RANK and
// OMPI_COMM_WORLD_SIZE. ok is false when neither pair is set in full; a
// pair that is set but malformed is an error.
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
