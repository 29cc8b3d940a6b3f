//go:build cgo && linux

package nccl

import (
	"testing"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/cfake"
)

// TestBindingAgainstFake calls the binding into a stand-in libnccl that
// records its arguments: the 128-byte unique id passed by value to
// ncclCommInitRank, ncclReduce's root after the op, ncclSend/ncclRecv's
// peer after the datatype, and ncclCommAbort.
func TestBindingAgainstFake(t *testing.T) {
	lib := cfake.Build(t, "fakenccl.c", "libfakenccl.so")
	l, err := LoadFrom([]string{lib})
	if err != nil {
		t.Fatalf("LoadFrom: %v", err)
	}
	if !l.HasP2P() {
		t.Fatal("ncclSend/ncclRecv not resolved")
	}
	id, err := l.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	id[0], id[127] = 1, 2
	c, err := l.InitRank(id, 16, 5)
	if err != nil || c != 0xc0 {
		t.Fatalf("InitRank = %#x, %v", c, err)
	}
	seen := unsafe.Slice((*byte)(cfake.Addr(t, lib, "seen_id")), 128)
	if seen[0] != 1 || seen[1] != 0x5a || seen[127] != 2 || cfake.Var[int32](t, lib, "seen_nranks") != 16 || cfake.Var[int32](t, lib, "seen_rank") != 5 {
		t.Errorf("ncclCommInitRank saw id %x.. nranks %d rank %d", seen[:2], cfake.Var[int32](t, lib, "seen_nranks"), cfake.Var[int32](t, lib, "seen_rank"))
	}
	if err := l.Reduce(0x1000, 0x2000, 777, Float32, Sum, 3, c, 0x9000); err != nil {
		t.Fatal(err)
	}
	if cfake.Var[uintptr](t, lib, "red_send") != 0x1000 || cfake.Var[uintptr](t, lib, "red_recv") != 0x2000 || cfake.Var[uint64](t, lib, "red_count") != 777 ||
		cfake.Var[int32](t, lib, "red_dt") != int32(Float32) || cfake.Var[int32](t, lib, "red_op") != int32(Sum) || cfake.Var[int32](t, lib, "red_root") != 3 ||
		cfake.Var[uintptr](t, lib, "red_comm") != 0xc0 || cfake.Var[uintptr](t, lib, "red_stream") != 0x9000 {
		t.Error("ncclReduce got its arguments out of order")
	}
	if err := l.Send(0x3000, 64, Float32, 7, c, 0x9100); err != nil {
		t.Fatal(err)
	}
	if err := l.Recv(0x4000, 64, Float32, 6, c, 0x9100); err != nil {
		t.Fatal(err)
	}
	bufs := *(*[2]uintptr)(cfake.Addr(t, lib, "p2p_buf"))
	peers := *(*[2]int32)(cfake.Addr(t, lib, "p2p_peer"))
	counts := *(*[2]uint64)(cfake.Addr(t, lib, "p2p_count"))
	if bufs != [2]uintptr{0x3000, 0x4000} || peers != [2]int32{7, 6} || counts != [2]uint64{64, 64} {
		t.Errorf("send/recv bufs %x peers %v counts %v", bufs, peers, counts)
	}
	if err := l.Abort(c); err != nil || cfake.Var[int32](t, lib, "aborted") != 1 || cfake.Var[int32](t, lib, "destroyed") != 0 {
		t.Errorf("Abort: %v, aborted %d destroyed %d", err, cfake.Var[int32](t, lib, "aborted"), cfake.Var[int32](t, lib, "destroyed"))
	}
}
