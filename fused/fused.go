package fused

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// Shape is the geometry of one fused call.
type Shape struct {
	// Tokens rows of Hidden elements each.
	Tokens, Hidden int
	// Eps is the RMSNorm epsilon of the model.
	Eps float32
}

// Op is the name fused calls carry in comm's records and errors.
const Op = string(device.OpAllReduceRMSNorm)

// AllReduceAddRMSNorm runs, on rank r's stream s, the all-reduce of partial fused with the
// residual add and RMSNorm:
//
//	for each row t: residual[t] += Σ_ranks partial[t]   (sum in rank order; Tree: in the tree's)
//	                out[t] = residual[t] / rms(residual[t]) · weight
//
// partial, residual and out hold Tokens×Hidden f32 values (out may be partial), weight
// Hidden. Every rank must call it with the same shape and variant.
func AllReduceAddRMSNorm(r *comm.Rank, s *device.Stream, v Variant, partial, residual, weight, out *device.Buffer, sh Shape) error {
	if err := check(r, partial, residual, weight, out, sh); err != nil {
		return err
	}
	count := sh.Tokens * sh.Hidden
	c := r.Communicator()
	v = v.Resolve(c, nil, sh.Tokens, sh.Hidden)
	if err := checkWire(r, v, sh.Hidden); err != nil {
		return err
	}
	f := &fusedCall{residual: residual.Float32s(), weight: weight.Float32s()[:sh.Hidden], out: out.Float32s(), shape: sh}
	var body func(*fusedCall, *comm.CallCtx, device.Block, int, int) error
	switch v {
	case Unfused:
		return unfused(r, s, partial, residual, weight, out, sh)
	case OneShot:
		body = (*fusedCall).oneShot
	case TwoShot:
		body = (*fusedCall).twoShot
	case NVLS:
		if !c.HasNVLS() {
			return fmt.Errorf("fused: rank %d: nvls needs a multicast switch; the fabric is %v", r.Rank(), c.Fabric())
		}
		body = (*fusedCall).nvls
	case Tree:
		body = (*fusedCall).tree
	case SeqParallel:
		return f.launchSeqParallel(r, s, partial, out)
	default:
		return fmt.Errorf("fused: rank %d: unknown variant %v", r.Rank(), v)
	}
	rowsPerChunk := c.ChunkCapacity(4) / sh.Hidden
	return r.LaunchCollective(s, comm.Collective{
		Op: Op, Algo: v.algo(), In: partial, Out: out, Count: count, OutCount: count,
		Chunk: rowsPerChunk * sh.Hidden,
		// the residual is read and written, the normalized row written
		Local: comm.LocalWork{BytesPerElem: 3 * 4, Class: device.ClassNorm},
		Grid:  func(n int) int { return max(1, min(c.Blocks(), n/sh.Hidden, (n+blockElems-1)/blockElems)) },
		Block: func(k *comm.CallCtx, b device.Block, off, n int) error { return body(f, k, b, off, n) },
		Wire:  true,
	})
}

// blockElems is the smallest share of a chunk worth its own block.
const blockElems = 32 << 10

func check(r *comm.Rank, partial, residual, weight, out *device.Buffer, sh Shape) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("fused: rank %d %s of %d×%d: %s", r.Rank(), Op, sh.Tokens, sh.Hidden, fmt.Sprintf(format, args...))
	}
	count := sh.Tokens * sh.Hidden
	switch {
	case sh.Tokens < 0 || sh.Hidden < 1:
		return fail("tokens must be ≥ 0 and hidden ≥ 1")
	case !(sh.Eps > 0):
		return fail("eps must be positive, got %v", sh.Eps)
	case partial == nil || residual == nil || weight == nil || out == nil:
		return fail("nil buffer")
	case sh.Hidden > r.Communicator().ChunkCapacity(4):
		return fail("a row of %d f32 does not fit the %d-element registered buffer", sh.Hidden, r.Communicator().ChunkCapacity(4))
	}
	for _, b := range []struct {
		name string
		buf  *device.Buffer
		need int
	}{{"partial", partial, count}, {"residual", residual, count}, {"weight", weight, sh.Hidden}, {"out", out, count}} {
		switch {
		case b.buf.DType() != dtype.F32:
			return fail("%s is %v; fused collectives run on f32 activations", b.name, b.buf.DType())
		case b.buf.Device() != r.Device() || b.buf.IsPeer():
			return fail("%s %v is not the rank's own memory", b.name, b.buf)
		case b.buf.Len() < b.need:
			return fail("%s holds %d elements, needs %d", b.name, b.buf.Len(), b.need)
		}
	}
	return nil
}

// fusedCall is what every block of one call reads: the rank's residual, norm weight and
// output, and the shape.
type fusedCall struct {
	residual, weight, out []float32
	shape                 Shape
	seqHalf               int // SeqParallel: where the residual rows start in tmp
}

// norm finishes global row t, whose reduced sum is already in out: residual += sum, then
// out = RMSNorm(residual)·weight.
func (f *fusedCall) norm(t int) {
	h := f.shape.Hidden
	row := f.out[t*h : (t+1)*h]
	vec.AddRMSNorm(row, f.residual[t*h:(t+1)*h], row, f.weight, f.shape.Eps)
}

// blockRows is block b's share [r0, r1) of a chunk's rows.
func blockRows(rows int, b device.Block) (r0, r1 int) {
	return rows * b.Index / b.Grid, rows * (b.Index + 1) / b.Grid
}

// owned is the part of a block's rows [r0, r1) that rank p reduces: whole rows when the
// block has at least one row per rank (TensorRT-LLM's token partition), else a slice of
// every row's columns (the hidden partition, for decode batches smaller than n).
type owned struct {
	rows     bool // partition by rows; else by columns
	lo, hi   int  // rows [lo, hi), or columns [lo, hi) of every row in [r0, r1)
	r0, r1   int
	ranks, h int
}

// ownedBy is rank p's part of a block's rows [r0, r1) of h values among n ranks; column
// slices are cut at multiples of g (which divides h).
func ownedBy(p, n, r0, r1, h, g int) owned {
	if r1-r0 >= n {
		return owned{rows: true, lo: r0 + (r1-r0)*p/n, hi: r0 + (r1-r0)*(p+1)/n, r0: r0, r1: r1, ranks: n, h: h}
	}
	units := h / g
	return owned{lo: g * (units * p / n), hi: g * (units * (p + 1) / n), r0: r0, r1: r1, ranks: n, h: h}
}

// spans calls fn for each contiguous element range [a, b) of the chunk that the part covers.
func (o owned) spans(fn func(a, b int)) {
	if o.rows {
		if o.hi > o.lo {
			fn(o.lo*o.h, o.hi*o.h)
		}
		return
	}
	for t := o.r0; t < o.r1; t++ {
		if o.hi > o.lo {
			fn(t*o.h+o.lo, t*o.h+o.hi)
		}
	}
}
