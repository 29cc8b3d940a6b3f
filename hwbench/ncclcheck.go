package hwbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/collsim/collsim/model"
)

// The data check, as nccl-tests -c 1: every rank's send data is a known
// pattern, receive buffers start as a sentinel, one launch runs, and the
// host compares every received element with the value NCCL must produce
// (exact: the pattern is small integers, whose float32 sums are exact).

// checkPeriod is the pattern's period in the element index.
const checkPeriod = 4093

// checkValue is element j of rank r's send data: an integer in
// [1, checkPeriod] that depends on both, so data from the wrong rank or the
// wrong offset shows.
func checkValue(r int, j int64) float32 {
	return float32(1 + (j*131+int64(r)*1031)%checkPeriod)
}

// checkSentinel is every byte of receive buffers before the launch: the
// float32 0xffffffff, a NaN that no pattern value or sum equals.
const checkSentinel = 0xff

type checker struct {
	rt   Runtime
	host Buffer
	pats map[int][]byte // rank -> one period of its pattern, little-endian float32
	sums []byte         // one period of the sum over ranks
	n    int            // ranks sums is for
}

func newChecker(rt Runtime, a *allocator, n int64) (*checker, error) {
	host, err := a.alloc(PinnedMem, 0, n)
	if err != nil {
		return nil, err
	}
	return &checker{rt: rt, host: host, pats: map[int][]byte{}}, nil
}

// pat returns one period of rank r's pattern.
func (c *checker) pat(r int) []byte {
	if p, ok := c.pats[r]; ok {
		return p
	}
	p := make([]byte, 4*checkPeriod)
	for k := 0; k < checkPeriod; k++ {
		binary.LittleEndian.PutUint32(p[4*k:], math.Float32bits(checkValue(r, int64(k))))
	}
	c.pats[r] = p
	return p
}

// sum returns one period of the elementwise sum of every rank's pattern.
func (c *checker) sum(nranks int) []byte {
	if c.n != nranks || c.sums == nil {
		c.sums = make([]byte, 4*checkPeriod)
		for k := 0; k < checkPeriod; k++ {
			var v float32
			for r := 0; r < nranks; r++ {
				v += checkValue(r, int64(k))
			}
			binary.LittleEndian.PutUint32(c.sums[4*k:], math.Float32bits(v))
		}
		c.n = nranks
	}
	return c.sums
}

// segment is part of an expected receive buffer: elements [at, at+n) hold
// the periodic pattern pat from element start on.
type segment struct {
	at, n, start int64
	pat          []byte
}

// expected lists the segments of rank's receive buffer after op.
func (c *checker) expected(op model.Collective, rank, nranks int, count int64) []segment {
	switch op {
	case model.AllReduce, model.Reduce:
		return []segment{{0, count, 0, c.sum(nranks)}}
	case model.Broadcast:
		return []segment{{0, count, 0, c.pat(0)}}
	case model.ReduceScatter:
		return []segment{{0, count, int64(rank) * count, c.sum(nranks)}}
	case model.SendRecv:
		return []segment{{0, count, 0, c.pat((rank - 1 + nranks) % nranks)}}
	case model.AllGather, model.AlltoAll:
		segs := make([]segment, nranks)
		for q := range segs {
			start := int64(0)
			if op == model.AlltoAll {
				start = int64(rank) * count
			}
			segs[q] = segment{int64(q) * count, count, start, c.pat(q)}
		}
		return segs
	}
	return nil
}

// cycle fills dst with pat repeated from element start on.
func cycle(dst, pat []byte, start int64) {
	off := int(start%checkPeriod) * 4
	for len(dst) > 0 {
		n := copy(dst, pat[off:])
		dst, off = dst[n:], 0
	}
}

// wrongIn counts the elements of got that differ from pat repeated from
// element start on, comparing a period at a time.
func wrongIn(got, pat []byte, start int64) int64 {
	var wrong int64
	off := int(start%checkPeriod) * 4
	for len(got) > 0 {
		want := pat[off:]
		n := min(len(got), len(want))
		if !bytes.Equal(got[:n], want[:n]) {
			for i := 0; i+4 <= n; i += 4 {
				if !bytes.Equal(got[i:i+4], want[i:i+4]) {
					wrong++
				}
			}
		}
		got, off = got[n:], 0
	}
	return wrong
}

// put copies the host bytes fill writes into device buffer dst.
func (c *checker) put(s Stream, dst Buffer, fill func(b []byte)) error {
	hb, err := c.rt.HostBytes(c.host)
	if err != nil {
		return err
	}
	fill(hb[:dst.Size])
	if err := s.Copy(dst, c.host, dst.Size); err != nil {
		return err
	}
	return s.Sync()
}

// checkColl runs op once on checked data and returns the number of wrong
// elements over every rank of the run.
func (r *runner) checkColl(ctx context.Context, c *checker, coll Collectives, local []*ncclRank, op model.Collective, count int64, nranks int, inPlace bool) (int64, error) {
	var wrong int64
	if count > 0 {
		for _, l := range local {
			send, recv := buffers(l, op, count, nranks, inPlace)
			if err := c.put(l.s, recv, func(b []byte) {
				if len(b) > 0 {
					b[0] = checkSentinel
					for n := 1; n < len(b); n *= 2 {
						copy(b[n:], b[:n])
					}
				}
			}); err != nil {
				return 0, err
			}
			if err := c.put(l.s, send, func(b []byte) { cycle(b, c.pat(l.rank), 0) }); err != nil {
				return 0, err
			}
		}
		if err := r.launch(coll, local, op, count, nranks, inPlace, 1); err != nil {
			return 0, err
		}
		for _, l := range local {
			if err := l.s.Sync(); err != nil {
				return 0, err
			}
		}
		for _, l := range local {
			if op == model.Reduce && l.rank != 0 {
				continue // only the root receives
			}
			_, recv := buffers(l, op, count, nranks, inPlace)
			if err := l.s.Copy(c.host, recv, recv.Size); err != nil {
				return 0, err
			}
			if err := l.s.Sync(); err != nil {
				return 0, err
			}
			hb, err := c.rt.HostBytes(c.host)
			if err != nil {
				return 0, err
			}
			for _, sg := range c.expected(op, l.rank, nranks, count) {
				wrong += wrongIn(hb[4*sg.at:4*(sg.at+sg.n)], sg.pat, sg.start)
			}
		}
	}
	if r.boot == nil {
		return wrong, nil
	}
	all, err := gatherNumbers[int64](ctx, r, fmt.Sprint(wrong), "#wrong")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, w := range all {
		total += w
	}
	return total, nil
}
