package comm

import (
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// A descriptor slot is a call's description in slotWords words of the rank's control
// buffer, written by its rank only. Its tag word names the call in one word: its sequence
// number and a digest of the other fields. A peer checks that the calls match by comparing
// one tag with its own and reads the fields only when the digests differ, to name the
// mismatch (or to name a rank's last call). The tag also guards the fields as a seqlock's
// version would: the writer zeroes it before it changes them and stores the new tag after,
// so a reader that finds the same nonzero tag before and after its read of the fields has
// them whole. A call whose fields equal what the slot holds (a loop issuing one call) only
// stores its tag.
const (
	slotTag   = 0
	slotOp    = 1 // opWords words: the op's name, zero-padded
	slotKind  = slotOp + opWords
	slotCount = slotKind + 1
	slotWords = 8 // a cache line; slotCount+1 are used
	opWords   = 4 // an op's name holds at most 8·opWords bytes
)

// The tag: the sequence number's low tagSeqBits bits on top, then a bit that is set in
// every tag (0 is no call), then a digest of the fields. Ranks stay within one call of each
// other, so the low bits of the sequence number tell the calls of a slot apart; two
// different descriptions share a digest with a probability of 2^-tagDigestBits.
const (
	tagSeqBits    = 24
	tagDigestBits = 64 - tagSeqBits - 1
	tagPublished  = 1 << tagDigestBits
)

// tagSeq is what a tag holds of sequence number seq.
func tagSeq(seq uint64) uint64 { return seq << (64 - tagSeqBits) }

// tagOf reports whether tag is the tag of call seq (of any description).
func tagOf(tag, seq uint64) bool {
	return tag != 0 && tag>>(64-tagSeqBits) == seq&(1<<tagSeqBits-1)
}

// descWords is a descriptor slot's words as a writer encodes them or a reader copied them.
type descWords [slotWords]uint64

// encode writes the call's description into w, its tag included.
func (d *callDesc) encode(w *descWords) {
	clear(w[:])
	var name [8 * opWords]byte
	copy(name[:], d.op)
	for i := range opWords {
		for j := range 8 {
			w[slotOp+i] |= uint64(name[8*i+j]) << (8 * j)
		}
	}
	w[slotKind] = uint64(d.algo) | uint64(d.proto)<<8 | uint64(d.t)<<16
	w[slotCount] = uint64(d.count)
	w[slotTag] = tagSeq(d.seq) | tagPublished | w.digest()
}

// encodedDesc is the last description a rank encoded, for the next call that repeats it
// (a loop issuing one call): its words then need only the new sequence number in the tag,
// where encoding them again was 8% of a small blocking call's CPU.
type encodedDesc struct {
	desc  callDesc // seq: the call that encoded it
	w     descWords
	valid bool
}

// words returns d encoded, its tag for d's sequence number.
func (e *encodedDesc) words(d *callDesc) descWords {
	same := *d
	same.seq = e.desc.seq // every field but the sequence number, whatever fields callDesc gains
	if e.valid && e.desc == same {
		w := e.w
		w[slotTag] = tagSeq(d.seq) | tagPublished | w[slotTag]&(tagPublished-1)
		return w
	}
	d.encode(&e.w)
	e.desc, e.valid = *d, true
	return e.w
}

// digest mixes the description's fields into tagDigestBits bits.
func (w *descWords) digest() uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, f := range w[slotOp : slotCount+1] {
		h = (h ^ f) * 0xff51afd7ed558ccd
		h ^= h >> 33
	}
	return h & (tagPublished - 1)
}

// decode is encode's inverse for call seq (the tag holds only its low bits).
func (w *descWords) decode(seq uint64) callDesc {
	var name [8 * opWords]byte
	for i := range opWords {
		for j := range 8 {
			name[8*i+j] = byte(w[slotOp+i] >> (8 * j))
		}
	}
	k := w[slotKind]
	return callDesc{
		seq: seq, op: strings.TrimRight(string(name[:]), "\x00"),
		algo: Algo(k), proto: Proto(k >> 8), t: dtype.DType(k >> 16), count: int(w[slotCount]),
	}
}

// sameCall reports whether two slots describe the same call: the same op, algorithm,
// protocol, dtype and count (sequence numbers aside).
func (w *descWords) sameCall(o *descWords) bool {
	return w[slotOp] == o[slotOp] && w[slotOp+1] == o[slotOp+1] && w[slotOp+2] == o[slotOp+2] &&
		w[slotOp+3] == o[slotOp+3] && w[slotKind] == o[slotKind] && w[slotCount] == o[slotCount]
}

// storeSlot publishes w in slot s, whose fields hold *written (what this writer, the slot's
// rank alone, last stored there), and updates *written.
func storeSlot(s []uint64, w, written *descWords) {
	if w.sameCall(written) {
		device.StoreRelease64(&s[slotTag], w[slotTag])
		return
	}
	device.StoreRelease64(&s[slotTag], 0) // the fields change: no reader may take them
	for i := slotOp; i <= slotCount; i++ {
		device.StoreRelease64(&s[i], w[i])
	}
	device.StoreRelease64(&s[slotTag], w[slotTag])
	*written = *w
}

// loadSlot copies slot s into w and reports whether it holds a whole description: never
// written, being written (by a writer that may have died mid-way) or rewritten while this
// read it all say no, the last after a few tries.
func loadSlot(s []uint64, w *descWords) bool {
	for range 4 {
		tag := atomic.LoadUint64(&s[slotTag])
		if tag == 0 {
			return false
		}
		for i := slotOp; i <= slotCount; i++ {
			w[i] = atomic.LoadUint64(&s[i])
		}
		if atomic.LoadUint64(&s[slotTag]) == tag {
			w[slotTag] = tag
			return true
		}
		runtime.Gosched()
	}
	return false
}

// publishedSlot is rank p's descriptor slot of call seq, as this rank maps it.
func (r *Rank) publishedSlot(p int, seq uint64) []uint64 {
	return r.peers[p].ctl[ctlPublished+int(seq%publishedDepth)*slotWords:][:slotWords]
}

// publishedTag returns rank p's tag in the slot of call seq: the call's when p published
// it, else another's (or 0).
func (r *Rank) publishedTag(p int, seq uint64) uint64 {
	return atomic.LoadUint64(&r.publishedSlot(p, seq)[slotTag])
}

// publishedCall copies into w rank p's published call of sequence number seq, and reports
// whether p published it (and has not moved on past the slot's other users).
func (r *Rank) publishedCall(p int, seq uint64, w *descWords) bool {
	return loadSlot(r.publishedSlot(p, seq), w) && tagOf(w[slotTag], seq)
}

// publish writes the call's descriptor into this rank's control buffer, in its published
// slot, and records it as the rank's last collective (Running).
func (cl *call) publish() {
	r := cl.r
	w := r.lastEncoded.words(&cl.desc)
	cl.tag = w[slotTag]
	storeSlot(r.publishedSlot(r.rank, cl.desc.seq), &w, &r.published[cl.desc.seq%publishedDepth])
	cl.recordLast(Running)
}

// The last-collective word: 0 before the rank's first call, else the call's state in the
// top byte and its sequence number in the low 56 bits. Its description is the call's
// published slot, which stays the call's until the rank publishes publishedDepth more: one
// store at a call's start and one at its end, where a copy of the description would take a
// seqlock's ten (a tenth of a small all-reduce's CPU).
func (cl *call) recordLast(state CallState) {
	device.StoreRelease64(&cl.r.peers[cl.r.rank].ctl[ctlLast], uint64(state)<<56|cl.desc.seq&seqMask)
}

// lastCall returns the rank's last collective as its control buffer records it, and its
// state; ok is false before its first call. A description the rank has since overwritten
// (it moved on while this read) leaves only the sequence number.
func (v *peerView) lastCall() (d callDesc, state CallState, ok bool) {
	last := atomic.LoadUint64(&v.ctl[ctlLast])
	if last == 0 {
		return callDesc{}, 0, false
	}
	seq, state := last&seqMask, CallState(last>>56)
	var w descWords
	if loadSlot(v.ctl[ctlPublished+int(seq%publishedDepth)*slotWords:], &w) && tagOf(w[slotTag], seq) {
		return w.decode(seq), state, true
	}
	return callDesc{seq: seq, op: "(description overwritten)"}, state, true
}
