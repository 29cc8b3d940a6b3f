package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/collsim/collsim/model"
)

// idxHeap is a binary min-heap of class slots keyed by K, with the position
// of every slot (pos, -1 if absent) so that a slot's key can be changed or
// removed in O(log size). pos is indexed by class slot and grown by the
// Network as slots are created.
type idxHeap[K cmp.Ordered] struct {
	k   []K
	c   []int32
	pos []int32
}

// timeHeap orders classes by completion event time, floatHeap by the time
// they come within completion tolerance.
type (
	timeHeap  = idxHeap[model.Time]
	floatHeap = idxHeap[float64]
)

func (h *idxHeap[K]) push(c int32, key K) {
	i := len(h.k)
	h.k = append(h.k, key)
	h.c = append(h.c, c)
	h.pos[c] = int32(i)
	h.up(i)
}

// fix sets slot c's key; c must be in the heap.
func (h *idxHeap[K]) fix(c int32, key K) {
	i := int(h.pos[c])
	old := h.k[i]
	h.k[i] = key
	if key < old {
		h.up(i)
	} else {
		h.down(i)
	}
}

// remove takes slot c out of the heap; c must be in it.
func (h *idxHeap[K]) remove(c int32) {
	i := int(h.pos[c])
	last := len(h.k) - 1
	if i != last {
		h.k[i], h.c[i] = h.k[last], h.c[last]
		h.pos[h.c[i]] = int32(i)
	}
	h.k, h.c = h.k[:last], h.c[:last]
	h.pos[c] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h *idxHeap[K]) up(i int) {
	k, c := h.k[i], h.c[i]
	for i > 0 {
		p := (i - 1) / 2
		if !(k < h.k[p]) {
			break
		}
		h.k[i], h.c[i] = h.k[p], h.c[p]
		h.pos[h.c[i]] = int32(i)
		i = p
	}
	h.k[i], h.c[i] = k, c
	h.pos[c] = int32(i)
}

func (h *idxHeap[K]) down(i int) {
	n := len(h.k)
	k, c := h.k[i], h.c[i]
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j+1 < n {
			j += b2i(h.k[j+1] < h.k[j]) // the same choice, without a branch
		}
		if !(h.k[j] < k) {
			break
		}
		h.k[i], h.c[i] = h.k[j], h.c[j]
		h.pos[h.c[i]] = int32(i)
		i = j
	}
	h.k[i], h.c[i] = k, c
	h.pos[c] = int32(i)
}

// joinTable finds, for a flow being started, a class started at the same
// instant with the same route, weight, cap and size that has no rate yet.
// It is an open-addressing hash table whose entries are valid for one
// instant only (an epoch), so it is never cleared: moving to a new instant
// bumps the epoch in O(1). A lookup costs O(len(route)) to hash and
// compare. Each instant starts on the table's first 64 entries and doubles
// the part it uses when that is half full, so an instant with few starts
// probes a few cache lines, not a table grown by the largest instant; the
// table allocates nothing once it has grown to the largest number of
// classes started in one instant.
type joinTable struct {
	t     []joinEntry
	size  int // entries the current instant uses, a power of 2
	used  int
	epoch uint64
	at    model.Time
	hash  uint64 // hash of the last lookup, for put
	live  []joinEntry
}

// joinTableMin is the part of the table an instant starts on.
const joinTableMin = 64

type joinEntry struct {
	epoch uint64
	hash  uint64
	c     int32
}

// find returns the matching class, or -1 and the table index at which put
// should record a new class for this key.
func (j *joinTable) find(n *Network, now model.Time, route []model.LinkID, w, cp, size float64) (int32, int) {
	if len(j.t) == 0 {
		j.t = make([]joinEntry, joinTableMin)
	}
	if j.epoch == 0 || j.at != now {
		j.epoch++
		j.at = now
		j.used = 0
		j.size = joinTableMin
	}
	h := uint64(len(route))*0x9e3779b97f4a7c15 ^ math.Float64bits(w)
	h = mix(h ^ math.Float64bits(cp))
	h = mix(h ^ math.Float64bits(size))
	for _, l := range route {
		h = mix(h ^ uint64(l))
	}
	j.hash = h
	mask := j.size - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := &j.t[i]
		if e.epoch != j.epoch {
			return -1, i
		}
		if e.hash != h {
			continue
		}
		c := e.c
		if (!n.ch[c].filled || n.ch[c].fast) && n.cSize[c] == size && n.cW[c] == w && n.cCap[c] == cp && sameRoute(n.cRoute[c], route) {
			return c, i
		}
	}
}

// put records class c at index i returned by the last find.
func (j *joinTable) put(i int, c int32) {
	j.t[i] = joinEntry{j.epoch, j.hash, c}
	j.used++
	if 2*j.used <= j.size {
		return
	}
	// Double the part in use: its live entries move to a new epoch of the
	// same instant, placed by the wider mask (an unfilled class is the
	// only match of its key, so where it lands changes no lookup).
	j.live = j.live[:0]
	for _, e := range j.t[:j.size] {
		if e.epoch == j.epoch {
			j.live = append(j.live, e)
		}
	}
	j.size *= 2
	if j.size > len(j.t) {
		j.t = make([]joinEntry, j.size)
	}
	j.epoch++
	mask := j.size - 1
	for _, e := range j.live {
		e.epoch = j.epoch
		k := int(e.hash) & mask
		for j.t[k].epoch == j.epoch {
			k = (k + 1) & mask
		}
		j.t[k] = e
	}
}

func sameRoute(a, b []model.LinkID) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// mix is a 64-bit finaliser (from MurmurHash3's fmix64).
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93e185a1a53
	h ^= h >> 33
	return h
}
