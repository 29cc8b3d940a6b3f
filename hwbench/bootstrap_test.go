package hwbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collsim/collsim/model"
)

func TestBootstrapAllGather(t *testing.T) {
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", n)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A connection that does not speak the protocol is refused and does
	// not take a rank's place.
	go func() {
		c, err := net.Dial("tcp", l.Addr())
		if err == nil {
			c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
			time.Sleep(50 * time.Millisecond)
			c.Close()
		}
	}()
	boots := make([]*Bootstrap, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 1; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			boots[r], errs[r] = Dial(ctx, l.Addr(), r, n)
		}(r)
	}
	boots[0], errs[0] = l.Accept(ctx)
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	defer func() {
		for _, b := range boots {
			b.Close()
		}
	}()
	for round := 0; round < 3; round++ {
		got := make([][][]byte, n)
		for r := 0; r < n; r++ {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				got[r], errs[r] = boots[r].AllGather(ctx, []byte(fmt.Sprintf("round %d from rank %d", round, r)))
			}(r)
		}
		wg.Wait()
		for r := 0; r < n; r++ {
			if errs[r] != nil {
				t.Fatalf("round %d rank %d: %v", round, r, errs[r])
			}
			for s := 0; s < n; s++ {
				if want := fmt.Sprintf("round %d from rank %d", round, s); string(got[r][s]) != want {
					t.Errorf("rank %d got %q from rank %d, want %q", r, got[r][s], s, want)
				}
			}
		}
	}
	// A rank that goes away makes the others fail rather than hang.
	boots[3].Close()
	if _, err := boots[0].AllGather(ctx, nil); err == nil {
		t.Error("AllGather succeeded with a rank gone")
	}
}

func TestBootstrapRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		b, err := l.Accept(ctx)
		if err == nil {
			b.Close()
		}
		done <- err
	}()
	// Wrong rank count: refused with a reason.
	if _, err := Dial(ctx, l.Addr(), 1, 3); err == nil || !strings.Contains(err.Error(), "says 3 ranks") {
		t.Errorf("Dial with a wrong rank count: %v", err)
	}
	if _, err := Dial(ctx, l.Addr(), 0, 2); err == nil {
		t.Error("Dial as rank 0 accepted")
	}
	b, err := Dial(ctx, l.Addr(), 1, 2)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	b.Close()
	if err := <-done; err != nil {
		t.Errorf("Accept: %v", err)
	}
	// Nobody listening: Dial gives up when the context ends.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := Dial(short, freeAddr(t), 1, 2); err == nil || !strings.Contains(err.Error(), "cannot reach coordinator") {
		t.Errorf("Dial to nobody: %v", err)
	}
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRunMultiRank runs three ranks of the fake as goroutines that meet
// through the TCP bootstrap on 127.0.0.1: ranks 0 and 1 on host "alpha",
// rank 2 on "beta". Every rank must get rank 0's NCCL unique id; rank 0
// writes the report with the nccl sweep over 3 ranks, rank 2 (first on
// beta) writes its host's probes to <out>.rank2.json, rank 1 writes nothing.
func TestRunMultiRank(t *testing.T) {
	dir := t.TempDir()
	world := NewFakeWorld()
	var fakes []*Fake
	for _, h := range []string{"alpha", "alpha", "beta"} {
		fakes = append(fakes, NewFake(FakeConfig{Hostname: h, GPUs: 2, NICs: 1, World: world}))
	}
	reps, errs := runRanksIn(t, dir, fakes, nil, []string{"topo", "nccl", "copy"}, func(o *Options) { o.MaxBytes = 64 * model.KiB })
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	id := fakes[0].SeenIDs()
	if len(id) != 1 || !bytes.HasPrefix(id[0], []byte("fake-nccl-id/alpha/")) {
		t.Fatalf("rank 0 ids %q", id)
	}
	for r := 1; r < 3; r++ {
		if got := fakes[r].SeenIDs(); len(got) != 1 || !bytes.Equal(got[0], id[0]) {
			t.Errorf("rank %d got id %q, want rank 0's %q", r, got, id[0])
		}
	}
	nr := reps[0].NCCL
	if nr.Mode != "multi-process" || nr.Ranks != 3 || len(nr.Devices) != 3 || strings.Join(nr.Hosts, ",") != "alpha,beta" {
		t.Fatalf("nccl %+v", nr)
	}
	// Local rank decides the GPU: alpha's second rank uses device 1, beta's first device 0.
	if nr.Devices[1].Device != 1 || nr.Devices[2].Device != 0 || nr.Devices[2].Host != "beta" {
		t.Errorf("devices %+v", nr.Devices)
	}
	// AllReduce on 3 ranks: busbw = algbw x 2(n-1)/n = 4/3.
	row := nr.Sweeps[0].Rows[len(nr.Sweeps[0].Rows)-1]
	if !near(float64(row.OOP.BusBW)/float64(row.OOP.AlgBW), 4.0/3, 1e-6) {
		t.Errorf("busbw/algbw = %g", float64(row.OOP.BusBW)/float64(row.OOP.AlgBW))
	}
	if st := statusOf(reps[1]); st["topo"] != StatusSkipped || st["copy"] != StatusSkipped || st["nccl"] != StatusOK {
		t.Errorf("rank 1 statuses %v", st)
	}
	if st := statusOf(reps[2]); st["topo"] != StatusOK || st["copy"] != StatusOK {
		t.Errorf("rank 2 statuses %v", st)
	}
	for name, want := range map[string]bool{"hwbench.json": true, "hwbench.rank2.json": true, "hwbench.rank1.json": false, "hwbench.json.nccl-tests.txt": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		if (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
	text, _ := os.ReadFile(filepath.Join(dir, "hwbench.json.nccl-tests.txt"))
	if !strings.Contains(string(text), "nGpus 1 ") || !strings.Contains(string(text), "#  Rank  2 Group  0 Pid   4242 on       beta device  0") {
		t.Errorf("nccl-tests text:\n%s", text)
	}
}

// TestGatherNumbers exchanges a number per rank over two bootstrapped
// ranks: every rank gets all values in rank order, and a rank that sends
// something else is named in every rank's error.
func TestGatherNumbers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var b1 *Bootstrap
	var err1 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		b1, err1 = Dial(ctx, l.Addr(), 1, 2)
	}()
	b0, err := l.Accept(ctx)
	<-done
	if err != nil || err1 != nil {
		t.Fatalf("bootstrap: %v, %v", err, err1)
	}
	defer b0.Close()
	defer b1.Close()
	runners := []*runner{{boot: b0}, {boot: b1}}
	exchange := func(texts ...string) ([][]int64, []error) {
		got, errs := make([][]int64, 2), make([]error, 2)
		var wg sync.WaitGroup
		for r := range runners {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				got[r], errs[r] = gatherNumbers[int64](ctx, runners[r], texts[r], "size")
			}(r)
		}
		wg.Wait()
		return got, errs
	}
	got, errs := exchange("3", "5")
	for r := range got {
		if errs[r] != nil || len(got[r]) != 2 || got[r][0] != 3 || got[r][1] != 5 {
			t.Errorf("rank %d got %v, %v; want [3 5]", r, got[r], errs[r])
		}
	}
	_, errs = exchange("3", "x")
	for r, err := range errs {
		if err == nil || err.Error() != `rank 1 sent a bad size "x"` {
			t.Errorf("rank %d: error %v, want rank 1's bad size named", r, err)
		}
	}
}

// TestConnectNoWiderListen: rank 0 falls back to listening on every
// interface only for an address of another machine. A host name that does
// not resolve (a typo) or a port in use fails with its own error at once;
// before, both listened on every interface at the port (the typo waiting
// for peers until the timeout).
func TestConnectNoWiderListen(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, addr := range []string{"no-such-host.invalid:0", busy.Addr().String()} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		b, err := Connect(ctx, addr, 0, 2)
		cancel()
		if b != nil {
			b.Close()
		}
		if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "waiting for") {
			t.Errorf("Connect(%s): %v, want the address's own error at once", addr, err)
		}
	}
}
