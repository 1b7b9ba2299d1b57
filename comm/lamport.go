package comm

import (
	"math"

	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// lamportEmpty is the word a flag-free slot holds until its writer fills it: −0.0 in each
// 32-bit half. Read as 16-bit lanes, two of the four are −0.0, so the word is empty for
// every dtype, and writers never store a −0.0 lane.
const lamportEmpty = 0x80000000_80000000

// lamportTile is how many words a reader converts at once.
const lamportTile = 128

// lamport is TensorRT-LLM's flag-free one-shot. Every rank owns three phases of n slots.
// A rank writes its input straight into its slot of the current phase on every rank,
// rewriting −0.0 as +0.0, so that −0.0 can mean "not yet written"; the reader polls its own
// slots until no lane is empty and sums them in rank order. No barrier: the data is the
// flag. The phase written two chunks from now is the one used one chunk ago, so a rank
// clears that one while it waits: nobody writes it again before every rank has finished
// reading it (a peer is at most one chunk ahead, since it needs this rank's next chunk).
//
// Elements travel packed in 64-bit words (two f32 or four 16-bit), each written with one
// release store (device.StoreRelease64): a reader that sees a word whole sees the value.
func (cl *call) lamport(b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	slotWords := r.c.cfg.LamportBytes / 8
	own := r.peers[r.rank].lamport
	phase := cl.lamportPhase
	lo, hi := blockSpan(lamportWords(cl.desc.t, count), b)
	for p := range n {
		slot := r.peers[p].lamport[(phase*n+r.rank)*slotWords:]
		from := lo
		if cl.fault == FaultCorrupt && p != r.rank && b.Index == 0 && lo < hi && off+count == cl.desc.count {
			atomic.StoreUint64(&slot[lo], lamportEmpty) // the data says "not written yet"
			from++
		}
		cl.lamportPush(slot[from:hi], off, from, count)
	}
	device.Fence() // the pushes before ringPeers looks for sleepers (device/memorder.go)
	cl.ringPeers()

	// Plain stores suffice for the clear: every peer's last write to that phase happened
	// before this rank read it, and its next write happens after it reads this rank's next
	// push, which follows the clear. The atomics in between order them (and tell the race
	// detector so).
	prev := (phase + 2) % 3
	clo, chi := blockSpan(cl.lamportPrev, b)
	for p := range n {
		fillSentinel(own[(prev*n+p)*slotWords:][clo:chi])
	}
	if err := cl.lamportReduce(b, own[phase*n*slotWords:], slotWords, off, lo, hi, count); err != nil {
		return err
	}
	return cl.verify(b, false) // every peer's data arrived, so every peer published its call
}

// lanes is how many elements of t one slot word carries, and laneBits their width.
func lanes(t dtype.DType) (lanes int, laneBits uint) {
	if t == dtype.F32 {
		return 2, 32
	}
	return 4, 16
}

// lamportWords is how many slot words count elements of t occupy.
func lamportWords(t dtype.DType, count int) int {
	k, _ := lanes(t)
	return (count + k - 1) / k
}

// lamportPush writes words [lo, lo+len(dst)) of the chunk at off into a peer's slot, every
// lane that holds −0.0 rewritten as +0.0 and lanes past the end as +0.0.
func (cl *call) lamportPush(dst []uint64, off, lo, count int) {
	k, bits := lanes(cl.desc.t)
	negZero := uint64(1) << (bits - 1)
	var src []uint64 // elements widened to their raw bits, one per lane
	var raw [4]uint64
	for j := range dst {
		e := k * (lo + j)
		src = raw[:0]
		for l := range k {
			var v uint64
			if e+l < count {
				if cl.desc.t == dtype.F32 {
					v = uint64(math.Float32bits(cl.in.Float32s()[off+e+l]))
				} else {
					v = uint64(cl.in.Uint16s()[off+e+l])
				}
			}
			if v == negZero {
				v = 0
			}
			src = append(src, v)
		}
		var w uint64
		for l, v := range src {
			w |= v << (bits * uint(l))
		}
		device.StoreRelease64(&dst[j], w)
	}
}

// lamportFull reports whether a slot word has been written: no lane holds −0.0.
func lamportFull(t dtype.DType, w uint64) bool {
	if t == dtype.F32 {
		return uint32(w) != 0x80000000 && uint32(w>>32) != 0x80000000
	}
	return uint16(w) != 0x8000 && uint16(w>>16) != 0x8000 && uint16(w>>32) != 0x8000 && uint16(w>>48) != 0x8000
}

// lamportReduce waits for words [lo, hi) of every slot and writes their rank-order sum.
func (cl *call) lamportReduce(b device.Block, slots []uint64, slotWords, off, lo, hi, count int) error {
	t, n := cl.desc.t, cl.r.c.n
	k, _ := lanes(t)
	var acc, wide [4 * lamportTile]float32
	var words [lamportTile]uint64
	for x := lo; x < hi; x += lamportTile {
		w := words[:min(lamportTile, hi-x)]
		elems := min(k*len(w), count-k*x)
		for p := range n {
			if err := cl.lamportLoad(b, w, slots[p*slotWords+x:], p); err != nil {
				return err
			}
			dst := wide[:elems]
			if p == 0 {
				dst = acc[:elems]
			}
			unpackWords(t, dst, w)
			if p > 0 {
				vec.AddF32(acc[:elems], dst)
			}
		}
		if t == dtype.F32 {
			copy(cl.outF32(off+k*x, elems), acc[:elems])
		} else {
			vec.Narrow(t, cl.outU16(off+k*x, elems), acc[:elems])
		}
	}
	return nil
}

// lamportLoad copies len(dst) words of a slot once each has been written, waiting for
// rank p (the slot's writer) where one has not.
func (cl *call) lamportLoad(b device.Block, dst, src []uint64, p int) error {
	t := cl.desc.t
	for j := range dst {
		w := atomic.LoadUint64(&src[j])
		if !lamportFull(t, w) {
			word := &src[j]
			err := cl.wait(b, "flag-free slot", func() bool { return lamportFull(t, atomic.LoadUint64(word)) }, nil)
			if err != nil {
				return cl.waitError(b, "flag-free slot", []int{p}, err)
			}
			w = atomic.LoadUint64(word)
		}
		dst[j] = w
	}
	return nil
}

// unpackWords converts slot words to f32 elements (len(dst) of them).
func unpackWords(t dtype.DType, dst []float32, w []uint64) {
	if t == dtype.F32 {
		for j := range dst {
			dst[j] = math.Float32frombits(uint32(w[j/2] >> (32 * (j % 2))))
		}
		return
	}
	for j := range dst {
		dst[j] = dtype.ToF32(t, uint16(w[j/4]>>(16*(j%4))))
	}
}

// fillSentinel marks slot words as empty.
func fillSentinel(words []uint64) {
	for i := range words {
		words[i] = lamportEmpty
	}
}

// lamportBeginChunk advances the flag-free phase for a chunk of count elements, as the
// prologue of its kernel: the phase lives with the rank's kernels, not the host, so that
// a replayed graph advances it too.
func (cl *call) lamportBeginChunk(count int) {
	r := cl.r
	cl.lamportPhase, cl.lamportPrev = int(r.lamportPhase%3), r.lamportPrevWords
	r.lamportPhase++
	r.lamportPrevWords = lamportWords(cl.desc.t, count)
}

// lamportChunk is the flag-free one-shot's chunk: what a slot of its buffer holds.
func lamportChunk(cfg *Config, t dtype.DType) int { return cfg.LamportBytes / t.Size() }
