package comm

import (
	"math"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// lamportEmpty is the word a flag-free slot holds until its writer fills it: −0.0 as f32,
// and −0.0 in the high half for 16-bit pairs, which a writer never leaves there.
const lamportEmpty = 0x80000000

// lamportTile is how many words a reader converts at once.
const lamportTile = 256

// lamport is TensorRT-LLM's flag-free one-shot. Every rank owns three phases of n slots.
// A rank writes its input straight into its slot of the current phase on every rank,
// rewriting −0.0 as +0.0, so that −0.0 can mean "not yet written"; the reader polls its own
// slots until no word is empty and sums them in rank order. No barrier: the data is the
// flag. The phase written two chunks from now is the one used one chunk ago, so a rank
// clears that one while it waits: nobody writes it again before every rank has finished
// reading it (a peer is at most one chunk ahead, since it needs this rank's next chunk).
//
// 16-bit elements travel in pairs per 32-bit word (both halves checked), f32 one per word.
func (cl *call) lamport(b device.Block, off, count int) error {
	r, n := cl.r, cl.r.c.n
	slotWords := r.c.cfg.LamportBytes / 4
	own := r.peers[r.rank].lamport
	phase := cl.lamportPhase
	lo, hi := blockSpan(lamportWords(cl.desc.t, count), b)
	for p := range n {
		slot := r.peers[p].lamport[(phase*n+r.rank)*slotWords:]
		cl.lamportPush(slot[lo:hi], off, lo, count)
	}
	cl.ringPeers()

	prev := (phase + 2) % 3
	clo, chi := blockSpan(cl.lamportPrev, b)
	for p := range n {
		slot := own[(prev*n+p)*slotWords:]
		for j := clo; j < chi; j++ {
			atomic.StoreUint32(&slot[j], lamportEmpty)
		}
	}
	return cl.lamportReduce(b, own[phase*n*slotWords:], slotWords, off, lo, hi, count)
}

// lamportWords is how many 32-bit words count elements of t occupy in a slot.
func lamportWords(t dtype.DType, count int) int {
	if t == dtype.F32 {
		return count
	}
	return (count + 1) / 2
}

// lamportPush writes words [lo, lo+len(dst)) of the chunk at off into a peer's slot.
func (cl *call) lamportPush(dst []uint32, off, lo, count int) {
	if cl.desc.t == dtype.F32 {
		src := cl.in.Float32s()[off+lo : off+lo+len(dst)]
		for j, v := range src {
			w := math.Float32bits(v)
			if w == lamportEmpty {
				w = 0
			}
			atomic.StoreUint32(&dst[j], w)
		}
		return
	}
	src := cl.in.Uint16s()[off : off+count]
	for j := range dst {
		e := 2 * (lo + j)
		h0, h1 := src[e], uint16(0)
		if e+1 < count {
			h1 = src[e+1]
		}
		atomic.StoreUint32(&dst[j], uint32(notNegZero16(h0))|uint32(notNegZero16(h1))<<16)
	}
}

func notNegZero16(h uint16) uint16 {
	if h == 0x8000 {
		return 0
	}
	return h
}

// lamportFull reports whether a slot word has been written.
func lamportFull(t dtype.DType, w uint32) bool {
	if t == dtype.F32 {
		return w != lamportEmpty
	}
	return w&0xffff != 0x8000 && w>>16 != 0x8000
}

// lamportReduce waits for words [lo, hi) of every slot and writes their rank-order sum.
func (cl *call) lamportReduce(b device.Block, slots []uint32, slotWords, off, lo, hi, count int) error {
	t, n := cl.desc.t, cl.r.c.n
	var acc, wide [2 * lamportTile]float32
	var words [lamportTile]uint32
	for x := lo; x < hi; x += lamportTile {
		w := words[:min(lamportTile, hi-x)]
		elems := len(w)
		if t != dtype.F32 {
			elems = min(2*len(w), count-2*x)
		}
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
			copy(cl.outF32(off+x, elems), acc[:elems])
		} else {
			vec.Narrow(t, cl.outU16(off+2*x, elems), acc[:elems])
		}
	}
	return nil
}

// lamportLoad copies len(dst) words of a slot once each has been written, waiting for
// rank p (the slot's writer) where one has not.
func (cl *call) lamportLoad(b device.Block, dst, src []uint32, p int) error {
	t := cl.desc.t
	for j := range dst {
		w := atomic.LoadUint32(&src[j])
		if !lamportFull(t, w) {
			word := &src[j]
			err := cl.r.dev.WaitUntil(cl.r.c.cfg.Timeout, func() bool { return cl.aborted(b) },
				func() bool { return lamportFull(t, atomic.LoadUint32(word)) })
			if err != nil {
				return cl.waitError(b, "flag-free slot", []int{p}, err)
			}
			w = atomic.LoadUint32(word)
		}
		dst[j] = w
	}
	return nil
}

// unpackWords converts slot words to f32 elements (len(dst) of them).
func unpackWords(t dtype.DType, dst []float32, w []uint32) {
	if t == dtype.F32 {
		for j := range dst {
			dst[j] = math.Float32frombits(w[j])
		}
		return
	}
	for j := range dst {
		dst[j] = dtype.ToF32(t, uint16(w[j/2]>>(16*(j%2))))
	}
}

// fillSentinel marks every word of fresh flag-free slots as empty.
func fillSentinel(words []uint32) {
	for i := range words {
		words[i] = lamportEmpty
	}
}
