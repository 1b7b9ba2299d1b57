package comm

import (
	"fmt"
	"strings"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// Wire is the format an all-reduce's inputs travel in between ranks (Config.Wire). The
// exact wire, the default, moves the input's own dtype and is bitwise what it always was.
// The low-precision wires trade accuracy for bytes, as vLLM's QuickReduce and its FP8
// all-reduce do: every rank encodes its input once, the sum of the decoded inputs is taken
// in f32 in rank order, so every rank still gets the same bits. Only one-shot and two-shot
// run them (Wire.Supports); on one rank nothing is exchanged and the wire does not apply.
type Wire uint8

// The wires.
const (
	// WireExact moves the input's dtype unchanged.
	WireExact Wire = iota
	// WireBF16 rounds f32 inputs to bf16 (to nearest even): half the bytes, within 2^-8
	// of each input. bf16 and f16 inputs already travel as 16 bits and move unchanged.
	WireBF16
	// WireFP8 encodes f32, bf16 and f16 inputs as OCP e4m3 with one f32 scale per block of
	// vec.E4M3Block values (the block's amax/448, vec.QuantizeE4M3): 1.125 bytes per value,
	// each within 2^-4 of its block's largest magnitude. Infinities and NaNs arrive as NaN.
	WireFP8
)

// Wires lists the wires in a fixed order.
var Wires = []Wire{WireExact, WireBF16, WireFP8}

// String returns the name --allreduce-dtype takes: exact, bf16 or fp8.
func (w Wire) String() string {
	switch w {
	case WireExact:
		return "exact"
	case WireBF16:
		return "bf16"
	case WireFP8:
		return "fp8"
	}
	return fmt.Sprintf("wire(%d)", uint8(w))
}

// ParseWire reads a wire's name as String writes it ("e4m3" is fp8 too).
func ParseWire(s string) (Wire, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "e4m3" {
		return WireFP8, nil
	}
	for _, w := range Wires {
		if w.String() == name {
			return w, nil
		}
	}
	return 0, fmt.Errorf("unknown all-reduce wire dtype %q (want exact, bf16 or fp8)", s)
}

// Supports reports whether algorithm a runs the wire: every algorithm runs the exact one;
// one-shot and two-shot (and Auto, which then picks between them) run the others. The
// others keep their own buffer formats (ring and tree partial sums, the flag-free
// one-shot's sentinels, NVLS's switch-side reduction of the staged dtype).
func (w Wire) Supports(a Algo) bool {
	if w == WireExact || a == Auto {
		return true
	}
	s, ok := a.spec()
	return ok && s.wires
}

// wireAlgoNames names the algorithms that run a low-precision wire, "oneshot and
// twoshot", for errors.
func wireAlgoNames() string {
	return nameList(algosWhere(func(s *algoSpec) bool { return s.wires }), "and")
}

// Wire returns the communicator's wire (Config.Wire).
func (c *Communicator) Wire() Wire { return c.cfg.Wire }

// MessageBytes is what count elements of t from one rank take on the communicator's wire,
// the message size that selects the algorithm (Pick) and that the kernels declare: with
// the fp8 wire, count codes and a 4-byte scale per block.
func (c *Communicator) MessageBytes(count int, t dtype.DType) int {
	return c.callWire(Auto, t).MessageBytes(count, t)
}

// MessageBytes is what count elements of t from one rank take on wire w (bf16 inputs on
// the bf16 wire: their own 2 bytes).
func (w Wire) MessageBytes(count int, t dtype.DType) int {
	switch w {
	case WireBF16:
		return min(2, t.Size()) * count
	case WireFP8:
		return count + 4*vec.E4M3Scales(count)
	}
	return count * t.Size()
}

// countOnWire is the number of elements of t whose message on the communicator's wire
// takes about bytes (at least one), which autotuning measures for a bucket.
func (c *Communicator) countOnWire(bytes int64, t dtype.DType) int {
	per := float64(c.MessageBytes(1<<20, t)) / (1 << 20)
	return max(1, int(float64(bytes)/per))
}

// wireFingerprint is what a low-precision wire adds to Fingerprint: a table tuned on
// another wire measured other kernels.
func (c *Communicator) wireFingerprint() string {
	if c.cfg.Wire == WireExact {
		return ""
	}
	return "/wire-" + c.cfg.Wire.String()
}

// callWire is the wire a call of algorithm a (Auto: whichever Pick gives) on elements of t
// runs: the communicator's, except where nothing is exchanged (one rank), where the
// algorithm keeps its own format, or where the input is already as narrow as the wire.
func (c *Communicator) callWire(a Algo, t dtype.DType) Wire {
	w := c.cfg.Wire
	switch {
	case c.n == 1, !w.Supports(a), w == WireBF16 && t != dtype.F32:
		return WireExact
	}
	return w
}

// checkWire rejects a wire that the forced algorithm cannot run.
func checkWire(w Wire, force Algo) error {
	switch {
	case w != WireExact && w != WireBF16 && w != WireFP8:
		return fmt.Errorf("comm: unknown Wire %v", w)
	case !w.Supports(force):
		return fmt.Errorf("comm: algorithm %v forced, but it does not run the %v wire (only %s do)", force, w, wireAlgoNames())
	}
	return nil
}

// pickWire is Pick on a low-precision wire: the table's choice where it runs the wire,
// else the built-in rule's choice between one-shot and two-shot (two-shot where the rule
// would take another algorithm, which it does only for large messages).
func (c *Communicator) pickWire(bytes int) Algo {
	if t := c.table.Load(); t != nil {
		if ch, ok := t.Pick(c.n, int64(bytes)); ok && c.cfg.Wire.Supports(ch.Algo) {
			return ch.Algo
		}
	}
	if DefaultRule(c.n, bytes, c.node.Fabric()) == OneShot {
		return OneShot
	}
	return TwoShot
}

// errWire is the error of a call whose algorithm does not run the communicator's wire.
func (r *Rank) errWire(op string, a Algo) error {
	return fmt.Errorf("comm: rank %d %s: algorithm %v does not run the %v wire (Config.Wire); %s do", r.rank, op, a, r.c.cfg.Wire, wireAlgoNames())
}

// wireViews are the low-precision wire's views of a registered buffer: e4m3 codes in the
// first half of its bytes (a chunk has at most BufferBytes/2 elements, of a 16-bit type),
// their f32 scales in the second half.
func wireViews(b *device.Buffer) (codes []uint8, scales []float32) {
	f := b.Float32s()
	return b.Bytes8()[:b.Bytes()/2], f[len(f)/2:]
}
