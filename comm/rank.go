package comm

import (
	"sync/atomic"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// Rank is one rank's side of a communicator: its device, its registered buffers and the
// peers' mappings of theirs. A rank's collectives must be issued from one goroutine and run
// on one stream at a time (its barrier counters are private to that order), as with NCCL.
type Rank struct {
	c    *Communicator
	rank int
	dev  *device.Device

	// Owned, registered buffers: staging receives eager inputs (and is what the multicast
	// object binds), tmp holds two-shot's reduced slices, signal holds barrier flags, lamport
	// holds the flag-free one-shot's three phases of n slots, ctl what peers must know of
	// the rank (control.go).
	staging, tmp, signal, lamport, ctl *device.Buffer
	peers                              []peerView // index p: rank p's buffers as this rank maps them

	seq              uint64                    // host side: the sequence number of the next call
	published        [publishedDepth]descWords // kernel side: what each descriptor slot holds (storeSlot)
	lastEncoded      encodedDesc               // kernel side: the last description published (publish)
	counter          [MaxBlocks]uint32         // kernel side: barriers passed per block (private)
	unread           bool                      // kernel side: an alternating one-shot's closing barrier is due (settle)
	lamportPhase     uint64                    // kernel side: flag-free chunks issued so far
	lamportPrevWords int                       // kernel side: words the last flag-free chunk wrote
	treeEpoch        [2][MaxBlocks]uint32      // kernel side: tree parts per tree and block so far
	twoLevelEpoch    [MaxBlocks]uint32         // kernel side: two-level chunks per block so far
	protoBuf         *device.Buffer            // LL and LL128 slots that peers write (protobuf.go)
	push             *device.Buffer            // the alternating one-shot's inputs, which peers write (oneshot.go)
	pieces           [2][MaxBlocks]uint64      // kernel side: LL, LL128 pieces per block so far
	scratch          [][3][]float32            // kernel side: per block, LL/LL128 working rows
	prims            [MaxBlocks]blockPrims     // kernel side: per block, the ring's and the tree's protocol
	rec              Recorder
	clock            callClock      // kernel side: the clock of the call records (callclock.go)
	graphInputs      []*graphInput  // captured, not yet registered (host side)
	bytesSaved       atomic.Int64   // staging copies replays skipped
	calls            callFreeList   // finished one-chunk calls, reused (chunkkernel.go)
	lastName         lastKernelName // host side: the last kernel name (kernelName)
}

// peerView is one rank's buffers as seen from another rank: plain slices over the peer's
// memory, taken once so that kernels index them without allocating.
type peerView struct {
	f32     []float32 // staging as f32
	u16     []uint16  // staging as 16-bit words
	tmpF32  []float32
	tmpU16  []uint16
	flags   []uint32 // signal words, accessed only with sync/atomic
	lamport []uint64 // flag-free slots, accessed only with sync/atomic
	// the LL/LL128 protocol buffer: LL words and LL128 flags only with sync/atomic,
	// LL128 data as f32 behind its line's flag
	protoU64 []uint64
	protoF32 []float32
	// the push buffer (oneshot.go), as f32 and 16-bit words
	pushF32 []float32
	pushU16 []uint16
	// staging's and tmp's views on the fp8 wire (wireViews)
	codes, tmpCodes   []uint8
	scales, tmpScales []float32
	ctl               []uint64 // the control buffer, accessed only with sync/atomic
	bell              bell     // rings the rank's waiters
}

// The registered buffers of a rank in the order their handles travel (registered).
const (
	regStaging = iota
	regTmp
	regSignal
	regLamport
	regCtl
	regProto // only with more than one rank
	regPush  // only with more than one rank
)

// viewOf takes the views of a rank's registered buffers, in registered's order.
func viewOf(bufs []*device.Buffer) peerView {
	staging, tmp := bufs[regStaging], bufs[regTmp]
	v := peerView{
		f32: staging.Float32s(), u16: staging.Uint16s(),
		tmpF32: tmp.Float32s(), tmpU16: tmp.Uint16s(),
		flags: bufs[regSignal].Uint32s(), lamport: bufs[regLamport].Uint64s(), ctl: bufs[regCtl].Uint64s(),
	}
	if len(bufs) > regProto {
		v.protoU64, v.protoF32 = bufs[regProto].Uint64s(), bufs[regProto].Float32s()
		v.pushF32, v.pushU16 = bufs[regPush].Float32s(), bufs[regPush].Uint16s()
	}
	v.codes, v.scales = wireViews(staging)
	v.tmpCodes, v.tmpScales = wireViews(tmp)
	return v
}

// registered returns the rank's registered buffers in the order their handles travel.
func (r *Rank) registered() []*device.Buffer {
	bufs := []*device.Buffer{r.staging, r.tmp, r.signal, r.lamport, r.ctl}
	if r.protoBuf != nil {
		bufs = append(bufs, r.protoBuf, r.push)
	}
	return bufs
}

func newRank(c *Communicator, r int, dev *device.Device) (*Rank, error) {
	rk := &Rank{c: c, rank: r, dev: dev, clock: newCallClock()}
	rk.rec.base = rk.clock.base // the records' times are the clock's readings
	var err error
	alloc := func(words int) *device.Buffer {
		if err != nil {
			return nil
		}
		var b *device.Buffer
		b, err = c.mem.Alloc(dev, dtype.F32, words) // raw words; views give each dtype
		return b
	}
	rk.staging = alloc(c.cfg.BufferBytes / 4)
	rk.tmp = alloc(c.cfg.BufferBytes / 4)
	rk.signal = alloc(signalWords)
	rk.lamport = alloc(3 * c.n * c.cfg.LamportBytes / 4)
	rk.ctl = alloc(2 * ctlWords)
	if c.n > 1 {
		c.slotWords = slotWordsFor(c.n, c.cfg.Blocks)
		rk.protoBuf = alloc(2 * protoWords(c.n, c.cfg.Blocks, c.slotWords)) // raw words, viewed as u64 and f32
		rk.push = alloc(pushBytes(c.n) / 4)
		rk.scratch = make([][3][]float32, c.cfg.Blocks)
		for i := range rk.scratch {
			for j := range rk.scratch[i] {
				rk.scratch[i][j] = make([]float32, ll128Wire{}.elems(c.slotWords)) // the most a slot carries
			}
		}
	}
	if err != nil {
		rk.free()
		return nil, fmtRankErr(r, "allocating registered buffers", err)
	}
	fillSentinel(rk.lamport.Uint64s())
	return rk, nil
}

// free frees the rank's registered buffers.
func (r *Rank) free() {
	for _, b := range []*device.Buffer{r.staging, r.tmp, r.signal, r.lamport, r.ctl, r.protoBuf, r.push} {
		if b != nil {
			_ = b.Free()
		}
	}
}

// Rank returns the rank's index in the communicator.
func (r *Rank) Rank() int { return r.rank }

// Size returns the number of ranks.
func (r *Rank) Size() int { return r.c.n }

// Device returns the rank's device.
func (r *Rank) Device() *device.Device { return r.dev }

// Communicator returns the communicator the rank belongs to.
func (r *Rank) Communicator() *Communicator { return r.c }
