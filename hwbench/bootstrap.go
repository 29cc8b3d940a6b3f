package hwbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// The bootstrap is a small TCP exchange through rank 0 that multi-process
// runs use to share the NCCL unique id, the ranks' host names and devices,
// and per-size timings. Rank 0 listens on the coordinator address; every
// other rank connects to it and nowhere else. Messages are length-prefixed
// frames (4-byte big-endian length); the first frame of a connection is a
// JSON hello naming the format, the rank and the rank count.

// maxFrame bounds one bootstrap message.
const maxFrame = 16 << 20

// bootHello is the first frame a rank sends.
type bootHello struct {
	Format string `json:"format"`
	Rank   int    `json:"rank"`
	NRanks int    `json:"nranks"`
}

// Bootstrap connects the ranks of one run. Its methods must be called by
// every rank in the same order; it is not safe for concurrent use.
type Bootstrap struct {
	rank, nranks int
	peers        []net.Conn // rank 0: one per other rank, by rank
	conn         net.Conn   // other ranks: the connection to rank 0

	mu     sync.Mutex
	closed bool
}

// Listener is rank 0's side while the other ranks connect.
type Listener struct {
	ln     net.Listener
	nranks int
}

// Listen starts rank 0's listener on addr ("host:port"; ":0" picks a free
// port) for a run of nranks processes.
func Listen(addr string, nranks int) (*Listener, error) {
	if nranks < 2 {
		return nil, fmt.Errorf("hwbench: bootstrap: %d ranks need no bootstrap", nranks)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hwbench: bootstrap: %w", err)
	}
	return &Listener{ln: ln, nranks: nranks}, nil
}

// Addr is the address the listener accepts on.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops listening.
func (l *Listener) Close() error { return l.ln.Close() }

// Accept waits until every other rank has connected and said hello, and
// returns rank 0's Bootstrap. Connections that do not speak the protocol,
// or claim a rank that is taken or out of range, are refused and do not
// count. It stops when ctx is done.
func (l *Listener) Accept(ctx context.Context) (*Bootstrap, error) {
	b := &Bootstrap{rank: 0, nranks: l.nranks, peers: make([]net.Conn, l.nranks)}
	stop := context.AfterFunc(ctx, func() { l.ln.Close() })
	defer stop()
	for have := 1; have < l.nranks; {
		c, err := l.ln.Accept()
		if err != nil {
			b.Close()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("hwbench: bootstrap: waiting for %d of %d ranks: %w", l.nranks-have, l.nranks-1, ctx.Err())
			}
			return nil, fmt.Errorf("hwbench: bootstrap: %w", err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		var h bootHello
		raw, err := readFrame(c)
		if err == nil {
			err = json.Unmarshal(raw, &h)
		}
		switch {
		case err != nil || h.Format != Format:
			err = fmt.Errorf("not a collsim hwbench rank")
		case h.NRanks != l.nranks:
			err = fmt.Errorf("rank %d says %d ranks, coordinator has %d", h.Rank, h.NRanks, l.nranks)
		case h.Rank < 1 || h.Rank >= l.nranks:
			err = fmt.Errorf("rank %d out of range 1..%d", h.Rank, l.nranks-1)
		case b.peers[h.Rank] != nil:
			err = fmt.Errorf("rank %d connected twice", h.Rank)
		}
		if err != nil {
			writeFrame(c, []byte("error: "+err.Error()))
			c.Close()
			continue
		}
		if err := writeFrame(c, []byte("ok")); err != nil {
			c.Close()
			continue
		}
		c.SetDeadline(time.Time{})
		b.peers[h.Rank] = c
		have++
	}
	return b, nil
}

// Dial connects rank (1..nranks-1) to the coordinator at addr, retrying
// until ctx is done while rank 0 is not listening yet.
func Dial(ctx context.Context, addr string, rank, nranks int) (*Bootstrap, error) {
	if rank < 1 || rank >= nranks {
		return nil, fmt.Errorf("hwbench: bootstrap: rank %d out of range 1..%d", rank, nranks-1)
	}
	hello, _ := json.Marshal(bootHello{Format: Format, Rank: rank, NRanks: nranks})
	wait := 100 * time.Millisecond
	var last error
	for {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if err = writeFrame(c, hello); err == nil {
				var reply []byte
				if reply, err = readFrame(c); err == nil {
					if string(reply) == "ok" {
						c.SetDeadline(time.Time{})
						return &Bootstrap{rank: rank, nranks: nranks, conn: c}, nil
					}
					c.Close()
					return nil, fmt.Errorf("hwbench: bootstrap: coordinator %s refused rank %d: %s", addr, rank, reply)
				}
			}
			c.Close()
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("hwbench: bootstrap: cannot reach coordinator %s: %v (%w)", addr, last, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// Connect joins a run: rank 0 listens on addr (on all interfaces at its
// port if, and only if, addr's host is not an address of this machine:
// EADDRNOTAVAIL, as when every rank is given the coordinator's address
// as the other nodes reach it) and waits for the others; the other ranks
// dial addr.
func Connect(ctx context.Context, addr string, rank, nranks int) (*Bootstrap, error) {
	if rank != 0 {
		return Dial(ctx, addr, rank, nranks)
	}
	l, err := Listen(addr, nranks)
	if err != nil {
		if !errors.Is(err, syscall.EADDRNOTAVAIL) {
			// A port in use or a bad address: listening on every
			// interface instead would not help and would open the port
			// wider than asked.
			return nil, err
		}
		_, port, perr := net.SplitHostPort(addr)
		if perr != nil {
			return nil, fmt.Errorf("hwbench: bootstrap: coordinator %q: %w", addr, perr)
		}
		if l, err = Listen(":"+port, nranks); err != nil {
			return nil, err
		}
	}
	defer l.Close()
	return l.Accept(ctx)
}

// Rank is this process's rank.
func (b *Bootstrap) Rank() int { return b.rank }

// NRanks is the number of ranks.
func (b *Bootstrap) NRanks() int { return b.nranks }

// AllGather sends data from every rank and returns every rank's data, by
// rank, to every rank.
func (b *Bootstrap) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if len(data) > maxFrame {
		return nil, fmt.Errorf("hwbench: bootstrap: %d-byte message exceeds %d", len(data), maxFrame)
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errors.New("hwbench: bootstrap: closed")
	}
	stop := context.AfterFunc(ctx, func() { b.Close() })
	defer stop()
	out, err := b.allGather(data)
	if err != nil {
		b.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("hwbench: bootstrap: %w", ctx.Err())
		}
		return nil, fmt.Errorf("hwbench: bootstrap: %w", err)
	}
	return out, nil
}

func (b *Bootstrap) allGather(data []byte) ([][]byte, error) {
	all := make([][]byte, b.nranks)
	if b.rank != 0 {
		if err := writeFrame(b.conn, data); err != nil {
			return nil, err
		}
		for i := range all {
			f, err := readFrame(b.conn)
			if err != nil {
				return nil, fmt.Errorf("from rank 0: %w", err)
			}
			all[i] = f
		}
		return all, nil
	}
	all[0] = data
	// Read every rank at once, so that one that has gone away fails the
	// exchange at once instead of after the ranks before it.
	type got struct {
		rank int
		data []byte
		err  error
	}
	ch := make(chan got, b.nranks-1)
	for r := 1; r < b.nranks; r++ {
		go func(r int) {
			f, err := readFrame(b.peers[r])
			ch <- got{r, f, err}
		}(r)
	}
	for i := 1; i < b.nranks; i++ {
		g := <-ch
		if g.err != nil {
			// Closing unblocks the other readers; they drain into ch.
			b.Close()
			return nil, fmt.Errorf("from rank %d: %w", g.rank, g.err)
		}
		all[g.rank] = g.data
	}
	var buf bytes.Buffer
	for _, f := range all {
		appendFrame(&buf, f)
	}
	for r := 1; r < b.nranks; r++ {
		if _, err := b.peers[r].Write(buf.Bytes()); err != nil {
			return nil, fmt.Errorf("to rank %d: %w", r, err)
		}
	}
	return all, nil
}

// Close closes the connections; a rank blocked in AllGather on another
// process then fails instead of waiting forever.
func (b *Bootstrap) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.conn != nil {
		b.conn.Close()
	}
	for _, c := range b.peers {
		if c != nil {
			c.Close()
		}
	}
	return nil
}

func appendFrame(buf *bytes.Buffer, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	buf.Write(n[:])
	buf.Write(data)
}

func writeFrame(w io.Writer, data []byte) error {
	var buf bytes.Buffer
	appendFrame(&buf, data)
	_, err := w.Write(buf.Bytes())
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds %d", size, maxFrame)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}
