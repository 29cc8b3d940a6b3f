//go:build cgo && linux

package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/collsim/collsim/hwbench/internal/dl"
)

func buildFake(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s): %v", cc, err)
	}
	out := filepath.Join(t.TempDir(), "libfakenccl.so")
	if msg, err := exec.Command(cc, "-shared", "-fPIC", "-o", out, filepath.Join("testdata", "fakenccl.c")).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake library: %v\n%s", err, msg)
	}
	return out
}

func fakeAddr(t *testing.T, lib, name string) unsafe.Pointer {
	t.Helper()
	l, err := dl.Open([]string{lib}, []dl.Sym{{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return l.Addr(name)
}

func fakeVar[T any](t *testing.T, lib, name string) T {
	t.Helper()
	return *(*T)(fakeAddr(t, lib, name))
}

// TestBindingAgainstFake calls the binding into a stand-in libnccl that
// records its arguments: the 128-byte unique id passed by value to
// ncclCommInitRank, ncclReduce's root after the op, ncclSend/ncclRecv's
// peer after the datatype, and ncclCommAbort.
func TestBindingAgainstFake(t *testing.T) {
	lib := buildFake(t)
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
	seen := unsafe.Slice((*byte)(fakeAddr(t, lib, "seen_id")), 128)
	if seen[0] != 1 || seen[1] != 0x5a || seen[127] != 2 || fakeVar[int32](t, lib, "seen_nranks") != 16 || fakeVar[int32](t, lib, "seen_rank") != 5 {
		t.Errorf("ncclCommInitRank saw id %x.. nranks %d rank %d", seen[:2], fakeVar[int32](t, lib, "seen_nranks"), fakeVar[int32](t, lib, "seen_rank"))
	}
	if err := l.Reduce(0x1000, 0x2000, 777, Float32, Sum, 3, c, 0x9000); err != nil {
		t.Fatal(err)
	}
	if fakeVar[uintptr](t, lib, "red_send") != 0x1000 || fakeVar[uintptr](t, lib, "red_recv") != 0x2000 || fakeVar[uint64](t, lib, "red_count") != 777 ||
		fakeVar[int32](t, lib, "red_dt") != int32(Float32) || fakeVar[int32](t, lib, "red_op") != int32(Sum) || fakeVar[int32](t, lib, "red_root") != 3 ||
		fakeVar[uintptr](t, lib, "red_comm") != 0xc0 || fakeVar[uintptr](t, lib, "red_stream") != 0x9000 {
		t.Error("ncclReduce got its arguments out of order")
	}
	if err := l.Send(0x3000, 64, Float32, 7, c, 0x9100); err != nil {
		t.Fatal(err)
	}
	if err := l.Recv(0x4000, 64, Float32, 6, c, 0x9100); err != nil {
		t.Fatal(err)
	}
	bufs := *(*[2]uintptr)(fakeAddr(t, lib, "p2p_buf"))
	peers := *(*[2]int32)(fakeAddr(t, lib, "p2p_peer"))
	counts := *(*[2]uint64)(fakeAddr(t, lib, "p2p_count"))
	if bufs != [2]uintptr{0x3000, 0x4000} || peers != [2]int32{7, 6} || counts != [2]uint64{64, 64} {
		t.Errorf("send/recv bufs %x peers %v counts %v", bufs, peers, counts)
	}
	if err := l.Abort(c); err != nil || fakeVar[int32](t, lib, "aborted") != 1 || fakeVar[int32](t, lib, "destroyed") != 0 {
		t.Errorf("Abort: %v, aborted %d destroyed %d", err, fakeVar[int32](t, lib, "aborted"), fakeVar[int32](t, lib, "destroyed"))
	}
}
