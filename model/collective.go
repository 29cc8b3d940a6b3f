package model

import (
	"fmt"
	"strings"
)

// Collective is a collective operation.
type Collective uint8

// Collectives. SendRecv is nccl-tests' sendrecv_perf (point-to-point ring).
const (
	AllReduce Collective = iota
	AllGather
	ReduceScatter
	Broadcast
	Reduce
	AlltoAll
	SendRecv
	NumCollectives
)

var collNames = [...]string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"}

// nccl-tests binary stems, in the same order.
var collTests = [...]string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"}

// String returns the collsim name ("allreduce").
func (c Collective) String() string {
	if int(c) < len(collNames) {
		return collNames[c]
	}
	return fmt.Sprintf("collective(%d)", c)
}

// TestName returns the nccl-tests stem ("all_reduce"); the binary is TestName()+"_perf".
func (c Collective) TestName() string {
	if int(c) < len(collTests) {
		return collTests[c]
	}
	return c.String()
}

// ParseCollective reads a collective name in collsim form (allreduce), nccl
// form (AllReduce) or nccl-tests form (all_reduce, all_reduce_perf,
// all_reduce_perf_mpi).
func ParseCollective(s string) (Collective, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimSuffix(k, "_mpi")
	k = strings.TrimSuffix(k, "_perf")
	k = strings.ReplaceAll(strings.ReplaceAll(k, "_", ""), "-", "")
	for i, n := range collNames {
		if n == k {
			return Collective(i), nil
		}
	}
	return 0, fmt.Errorf("unknown collective %q (known: %s)", s, strings.Join(collNames[:], ", "))
}

// BusBWFactor is nccl-tests' busbw/algbw factor for n ranks
// (doc/PERFORMANCE.md; nccl-facts §1.1): 2(n-1)/n for AllReduce, (n-1)/n for
// AllGather, ReduceScatter and AlltoAll, 1 for Broadcast, Reduce and SendRecv.
func (c Collective) BusBWFactor(n int) float64 {
	if n <= 1 {
		if c == AllReduce || c == AllGather || c == ReduceScatter || c == AlltoAll {
			return 0
		}
		return 1
	}
	switch c {
	case AllReduce:
		return 2 * float64(n-1) / float64(n)
	case AllGather, ReduceScatter, AlltoAll:
		return float64(n-1) / float64(n)
	}
	return 1
}

// HasRedop reports whether the collective reduces (prints a real redop).
func (c Collective) HasRedop() bool { return c == AllReduce || c == ReduceScatter || c == Reduce }

// HasRoot reports whether the collective has a root rank.
func (c Collective) HasRoot() bool { return c == Broadcast || c == Reduce }

// TestSize returns the size nccl-tests prints and the per-rank count it passes
// to NCCL for a requested size in bytes with elements of elemSize bytes and n
// ranks: for AllGather, ReduceScatter and AlltoAll the per-rank count is
// floor(bytes/elemSize/n) rounded down to a 16-byte multiple and the printed
// size is count*n*elemSize (nccl-facts §1.1); otherwise count = bytes/elemSize.
func (c Collective) TestSize(bytes Bytes, elemSize, n int) (size Bytes, count int64) {
	if elemSize <= 0 {
		elemSize = 4
	}
	switch c {
	case AllGather, ReduceScatter, AlltoAll:
		per := int64(bytes) / int64(elemSize) / int64(max(n, 1))
		align := int64(16 / elemSize)
		if align > 1 {
			per -= per % align
		}
		return Bytes(per * int64(elemSize) * int64(max(n, 1))), per
	}
	cnt := int64(bytes) / int64(elemSize)
	return Bytes(cnt * int64(elemSize)), cnt
}
