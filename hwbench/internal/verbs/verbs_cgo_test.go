//go:build cgo && linux

package verbs

import (
	"testing"

	"github.com/collsim/collsim/hwbench/internal/cfake"
)

// TestEndpointAgainstFake builds a 4-queue-pair endpoint on a stand-in
// libibverbs, connects each queue pair to a peer's, and registers GPU
// memory through DMA-BUF: ibv_reg_dmabuf_mr must get (offset, length,
// iova, fd, access) in verbs.h's order, and each RTR transition the peer's
// queue pair number and the MTU.
func TestEndpointAgainstFake(t *testing.T) {
	lib := cfake.Build(t, "fakeverbs.c", "libfakeverbs.so")
	l, err := LoadFrom([]string{lib})
	if err != nil {
		t.Fatalf("LoadFrom: %v", err)
	}
	if !l.HasDMABuf() {
		t.Fatal("ibv_reg_dmabuf_mr not resolved")
	}
	c, err := l.Open("mlx5_fake")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep, err := c.Endpoint(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	qpns := ep.QPNs()
	if len(qpns) != 4 || qpns[0] != 0x100 || qpns[3] != 0x103 {
		t.Fatalf("QPNs %x", qpns)
	}
	for i := range qpns {
		if err := ep.Connect(i, uint32(0x900+i), Route{Port: 1, LID: 7, MTU: MTUEnum(4096)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, dest, mtu := cfake.Var[int32](t, lib, "rtr_count"), cfake.Var[[16]uint32](t, lib, "rtr_dest"), cfake.Var[int32](t, lib, "rtr_mtu"); n != 4 || dest[0] != 0x900 || dest[3] != 0x903 || mtu != 5 {
		t.Errorf("RTR: %d transitions, dest %x, mtu %d", n, dest[:4], mtu)
	}
	mr, err := ep.RegisterDMABuf(0x1234, 1<<20, 0x7f0000201234, 42)
	if err != nil {
		t.Fatal(err)
	}
	if off, ln, iova, fd, acc := cfake.Var[uint64](t, lib, "dm_offset"), cfake.Var[uint64](t, lib, "dm_length"), cfake.Var[uint64](t, lib, "dm_iova"), cfake.Var[int32](t, lib, "dm_fd"), cfake.Var[int32](t, lib, "dm_access"); off != 0x1234 || ln != 1<<20 || iova != 0x7f0000201234 || fd != 42 || acc != 7 {
		t.Errorf("ibv_reg_dmabuf_mr(offset %#x, length %d, iova %#x, fd %d, access %d)", off, ln, iova, fd, acc)
	}
	if addr, rkey := mr.Keys(); addr != 0x7f0000201234 || rkey != 22 {
		t.Errorf("region keys %#x %d", addr, rkey)
	}
}
