package comm

import (
	"sync/atomic"
)

// LL128 lines: 16 words of 64 bits (128 bytes), 15 of data (30 f32) and the flag.
const (
	ll128LineWords = 16
	ll128LineElems = 30
)

// ll128Wire is NCCL's LL128 protocol: each 128-byte line carries 120 bytes of data and, in
// its last 8 bytes, the piece's flag. The sender copies a line's data, then stores its
// flag (an atomic store: release); the receiver loads the flag (acquire) and, once it is
// the piece's, copies the data, which that load orders after the sender's copy. A GPU gets
// the same from one warp storing the whole line; 120/128 of the bandwidth is data.
type ll128Wire struct{}

func (ll128Wire) proto() Proto        { return LL128 }
func (ll128Wire) elems(words int) int { return words / ll128LineWords * ll128LineElems }

func (ll128Wire) put(s slot, src []float32, flag uint32) {
	for l, x := 0, 0; x < len(src); l, x = l+1, x+ll128LineElems {
		k := min(ll128LineElems, len(src)-x)
		copy(s.f32[l*2*ll128LineWords:], src[x:x+k])
		atomic.StoreUint64(&s.u64[l*ll128LineWords+ll128LineWords-1], uint64(flag))
	}
}

func (w ll128Wire) take(s slot, dst []float32, from int, flag uint32) int {
	for x := from; x < len(dst); x += ll128LineElems {
		l := x / ll128LineElems
		if w.flagOf(s, x) != flag {
			return x
		}
		k := min(ll128LineElems, len(dst)-x)
		copy(dst[x:x+k], s.f32[l*2*ll128LineWords:])
	}
	return len(dst)
}

// flagOf reads the flag of the line that holds element i. The flag takes the whole last
// word, so a line's stale data can never pass for a flag.
func (ll128Wire) flagOf(s slot, i int) uint32 {
	return uint32(atomic.LoadUint64(&s.u64[i/ll128LineElems*ll128LineWords+ll128LineWords-1]))
}
