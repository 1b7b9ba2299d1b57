package comm

import (
	"math"
	"sync/atomic"
)

// llWire is NCCL's LL protocol: each 64-bit word holds one f32 in its low half and the
// piece's flag in its high half, stored with one 64-bit atomic store, so a word is either
// old or entirely new and the receiver, polling the words themselves, needs no fence and
// no separate flag. Half of every word is flag: half the bandwidth.
type llWire struct{}

func (llWire) proto() Proto        { return LL }
func (llWire) elems(words int) int { return words }

func (llWire) put(s slot, src []float32, flag uint32) {
	hi := uint64(flag) << 32
	for i, v := range src {
		atomic.StoreUint64(&s.u64[i], hi|uint64(math.Float32bits(v)))
	}
}

func (llWire) take(s slot, dst []float32, from int, flag uint32) int {
	for i := from; i < len(dst); i++ {
		w := atomic.LoadUint64(&s.u64[i])
		if uint32(w>>32) != flag {
			return i
		}
		dst[i] = math.Float32frombits(uint32(w))
	}
	return len(dst)
}

func (llWire) flagOf(s slot, i int) uint32 { return uint32(atomic.LoadUint64(&s.u64[i]) >> 32) }
