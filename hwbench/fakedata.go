package hwbench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/collsim/collsim/model"
)

// The fake keeps contents only for buffers that hold data: a buffer gets
// its bytes when the host writes it (HostBytes) or a copy moves data into
// it; every other buffer reads as zeros. A collective moves data only when
// one of its inputs is fresh, that is written by the host (directly or by
// a copy) since the last collective read it: the check launch after the
// host filled the buffers computes, the timed launches that follow do not
// (their data is never read). So the timing-only probes cost no memory or
// time, and the nccl probe's data check sees what a real NCCL computes.

// baseOf returns the allocation holding b's first byte. f.mu must be held.
func (f *Fake) baseOf(b Buffer) (Buffer, bool) {
	if base, ok := f.live[b.Addr]; ok {
		return base, true
	}
	for _, base := range f.live {
		if b.Addr >= base.Addr && b.Addr < base.Addr+uint64(base.Size) {
			return base, true
		}
	}
	return Buffer{}, false
}

// bytesOf returns b's bytes, creating its allocation's contents when
// create is set; nil when it holds none. f.mu must be held.
func (f *Fake) bytesOf(b Buffer, create bool) []byte {
	base, ok := f.baseOf(b)
	if !ok || b.Addr+uint64(b.Size) > base.Addr+uint64(base.Size) {
		return nil
	}
	data := f.data[base.Addr]
	if data == nil {
		if !create {
			return nil
		}
		data = make([]byte, base.Size)
		f.data[base.Addr] = data
	}
	if create {
		f.fresh[base.Addr] = true
	}
	off := b.Addr - base.Addr
	return data[off : off+uint64(b.Size)]
}

// moveData performs the data side of a copy of n bytes.
func (f *Fake) moveData(dst, src Buffer, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.bytesOf(src.Slice(0, n), false)
	if s == nil {
		if d := f.bytesOf(dst.Slice(0, n), false); d != nil {
			clear(d)
		}
		return
	}
	copy(f.bytesOf(dst.Slice(0, n), true), s)
}

func (r fakeRuntime) HostBytes(b Buffer) ([]byte, error) {
	if b.Kind == DeviceMem {
		return nil, fmt.Errorf("fake cuda: host access to device memory")
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	d := r.f.bytesOf(b, true)
	if d == nil && b.Size > 0 {
		return nil, fmt.Errorf("fake cuda: %#x is not host memory this runtime allocated", b.Addr)
	}
	return d, nil
}

// FakeWorld joins the fakes of a multi-process test, as the network joins
// real ranks: communicators created with the same NCCL unique id on fakes
// that share a world exchange data and wait for each other. Without one, a
// fake's communicator of several processes moves no data and waits for no
// one (the data check then fails).
type FakeWorld struct {
	mu    sync.Mutex
	comms map[string]*fakeCommWorld
}

// NewFakeWorld returns an empty world.
func NewFakeWorld() *FakeWorld { return &FakeWorld{comms: map[string]*fakeCommWorld{}} }

func (w *FakeWorld) comm(id string, nranks int) *fakeCommWorld {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.comms[id]
	if c == nil {
		c = newCommWorld(nranks)
		w.comms[id] = c
	}
	return c
}

// fakeCommWorld is the state every rank of one fake communicator shares:
// the launches posted so far, by sequence number; when every rank has
// posted launch k, its data moves.
type fakeCommWorld struct {
	mu     sync.Mutex
	nranks int
	// detached: the other ranks live in processes this fake cannot see
	// (no FakeWorld); launches complete at once and move no data.
	detached bool
	posted   map[int][]fakeLaunch
	done     map[int]chan struct{} // closed when launch seq has run on every rank
}

func newCommWorld(nranks int) *fakeCommWorld {
	return &fakeCommWorld{nranks: nranks, posted: map[int][]fakeLaunch{}, done: map[int]chan struct{}{}}
}

// doneCh returns the channel closed when launch seq has completed. w.mu
// must be held.
func (w *fakeCommWorld) doneCh(seq int) chan struct{} {
	ch := w.done[seq]
	if ch == nil {
		ch = make(chan struct{})
		w.done[seq] = ch
	}
	return ch
}

// closedCh returns a closed channel: a launch that is already complete.
func closedCh() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// fakeWaitLimit bounds how long a stream waits for the other ranks of a
// collective (a rank that died would otherwise hang the test).
const fakeWaitLimit = time.Minute

type fakeLaunch struct {
	f          *Fake
	rank       int
	op         model.Collective
	count      int64
	send, recv Buffer
}

// post records one rank's launch number seq and, when it is the last rank
// of that launch, computes the collective. It returns the channel closed
// when the launch has completed on every rank: work after it on the
// rank's stream waits for that, as on a GPU.
func (w *fakeCommWorld) post(seq int, l fakeLaunch) (<-chan struct{}, error) {
	if w.detached {
		return closedCh(), nil
	}
	w.mu.Lock()
	w.posted[seq] = append(w.posted[seq], l)
	ls := w.posted[seq]
	ch := w.doneCh(seq)
	if len(ls) < w.nranks {
		w.mu.Unlock()
		return ch, nil
	}
	delete(w.posted, seq)
	delete(w.done, seq)
	w.mu.Unlock()
	defer close(ch)
	byRank := make([]fakeLaunch, w.nranks)
	for _, x := range ls {
		byRank[x.rank] = x
	}
	for _, x := range byRank {
		if x.op != byRank[0].op || x.count != byRank[0].count {
			return ch, fmt.Errorf("fake nccl: ranks disagree on launch %d (%s of %d vs %s of %d)", seq, byRank[0].op, byRank[0].count, x.op, x.count)
		}
	}
	if anyFresh(byRank) {
		computeCollective(byRank)
	}
	return ch, nil
}

// waitPending waits until the collectives enqueued on s have completed on
// every rank.
func (s *fakeStream) waitPending() error {
	for _, ch := range s.pending {
		select {
		case <-ch:
		case <-time.After(fakeWaitLimit):
			return fmt.Errorf("fake nccl: the other ranks did not launch the collective within %v", fakeWaitLimit)
		}
	}
	s.pending = nil
	return nil
}

// anyFresh reports whether some input of the launch is fresh, and makes
// every input and output stale.
func anyFresh(ls []fakeLaunch) bool {
	fresh := false
	for _, l := range ls {
		l.f.mu.Lock()
		for _, b := range []Buffer{l.send, l.recv} {
			if base, ok := l.f.baseOf(b); ok {
				if b == l.send && l.f.fresh[base.Addr] {
					fresh = true
				}
				delete(l.f.fresh, base.Addr)
			}
		}
		l.f.mu.Unlock()
	}
	return fresh
}

// readBytes copies n bytes of b (zeros when b holds no data).
func readBytes(f *Fake, b Buffer, n int64) []byte {
	out := make([]byte, n)
	f.mu.Lock()
	copy(out, f.bytesOf(b.Slice(0, n), false))
	f.mu.Unlock()
	return out
}

func writeBytes(f *Fake, b Buffer, v []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	copy(f.bytesOf(b.Slice(0, int64(len(v))), true), v)
	if base, ok := f.baseOf(b); ok {
		delete(f.fresh, base.Addr) // a collective's output is not fresh input
	}
}

// sumFloats adds the float32 vectors in[q][off:off+n] (bytes) elementwise.
func sumFloats(in [][]byte, off, n int64) []byte {
	out := make([]byte, n)
	for i := int64(0); i+4 <= n; i += 4 {
		var v float32
		for q := range in {
			v += math.Float32frombits(binary.LittleEndian.Uint32(in[q][off+i:]))
		}
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(v))
	}
	return out
}

// computeCollective does what NCCL would do with the data of one launch
// on every rank (float32, sum, root 0): every input is read before any
// output is written, so in-place launches see their inputs.
func computeCollective(ls []fakeLaunch) {
	n := len(ls)
	per := ls[0].count * ncclElemSize
	op := ls[0].op
	in := make([][]byte, n)
	for r, l := range ls {
		switch op {
		case model.ReduceScatter, model.AlltoAll:
			in[r] = readBytes(l.f, l.send, per*int64(n))
		default:
			in[r] = readBytes(l.f, l.send, per)
		}
	}
	var reduced []byte
	if op == model.AllReduce || op == model.Reduce {
		reduced = sumFloats(in, 0, per)
	}
	for r, l := range ls {
		var out []byte
		switch op {
		case model.AllReduce:
			out = reduced
		case model.Reduce:
			if r != 0 {
				continue
			}
			out = reduced
		case model.Broadcast:
			out = in[0]
		case model.AllGather:
			out = bytes.Join(in, nil)
		case model.ReduceScatter:
			out = sumFloats(in, int64(r)*per, per)
		case model.AlltoAll:
			out = make([]byte, 0, per*int64(n))
			for q := 0; q < n; q++ {
				out = append(out, in[q][int64(r)*per:int64(r+1)*per]...)
			}
		case model.SendRecv:
			out = in[(r-1+n)%n]
		}
		if l.f.cfg.Corrupt == op.String() && len(out) >= 4 {
			out = append([]byte(nil), out...)
			out[0] ^= 0x40 // one element off
		}
		writeBytes(l.f, l.recv, out)
	}
}
