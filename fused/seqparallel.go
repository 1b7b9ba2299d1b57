package fused

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/vec"
)

// SeqParallelOp is the name the sequence-parallel variant's calls carry in comm's records,
// errors and traces: its exchange is a reduce-scatter and an all-gather, not an all-reduce.
const SeqParallelOp = string(device.OpReduceScatterRMSNormAllGather)

// launchSeqParallel enqueues the sequence-parallel variant. Its chunks are half what the
// registered buffers hold: tmp keeps the normalized rows in its lower half and the new
// residual rows in its upper half.
func (f *fusedCall) launchSeqParallel(r *comm.Rank, s *device.Stream, partial, out *device.Buffer) error {
	c, sh := r.Communicator(), f.shape
	f.seqHalf = c.ChunkCapacity(4) / 2
	if sh.Hidden > f.seqHalf {
		return fmt.Errorf("fused: rank %d %s of %d×%d: a row of %d f32 does not fit half the %d-element registered buffer, which the sequence-parallel variant needs",
			r.Rank(), SeqParallelOp, sh.Tokens, sh.Hidden, sh.Hidden, c.ChunkCapacity(4))
	}
	count := sh.Tokens * sh.Hidden
	return r.LaunchCollective(s, comm.Collective{
		Op: SeqParallelOp, Algo: SeqParallel.algo(), In: partial, Out: out, Count: count, OutCount: count,
		Chunk: f.seqHalf / sh.Hidden * sh.Hidden,
		// the gather writes the normalized and the residual rows (the owner's reads of its
		// 1/n of the residual are left out)
		Local: comm.LocalWork{BytesPerElem: 2 * 4, Class: device.ClassNorm},
		// as the other variants' grid, but with at least one row per rank in every block
		// where the chunk has the rows, so that no rank sits out a block
		Grid:  func(n int) int { return max(1, min(c.Blocks(), n/sh.Hidden/c.Size(), (n+blockElems-1)/blockElems)) },
		Block: func(k *comm.CallCtx, b device.Block, off, n int) error { return f.seqParallel(k, b, off, n) },
	})
}

// seqParallel is Megatron's sequence-parallel decomposition of the all-reduce, fused into
// one kernel (TensorRT-LLM's and vLLM's reduce-scatter + RMSNorm + all-gather): every rank
// stages its block's rows; barrier; rank p reduces the rows it owns over all ranks (rank
// order, so the sums are one-shot's bits) into its tmp buffer, adds the residual and
// normalizes them there — the norm runs on 1/n of the rows, not on all of them as in
// one-shot and two-shot — keeping the new residual rows in tmp's upper half; barrier;
// every rank gathers each owner's normalized and residual rows into out and residual.
// Each rank reads (n-1)/n·S to reduce and 2(n-1)/n·S to gather (the residual as well as
// the output, because the API returns the whole residual on every rank); as with two-shot,
// nobody writes tmp before the next call's first barrier, so two barriers suffice.
//
// Rows split by rank within each block: rank p owns rows [r0 + m·p/n, r0 + m·(p+1)/n) of
// the block's m rows [r0, r1), so tokens that n does not divide leave some ranks one row
// more than others, and with fewer rows than ranks some ranks own none and only gather.
// Nothing is padded, and the bits do not depend on the split.
func (f *fusedCall) seqParallel(k *comm.CallCtx, b device.Block, off, n int) error {
	h, ranks, half := f.shape.Hidden, k.Size(), f.seqHalf
	r0, r1 := blockRows(n/h, b)
	k.Stage(off, r0*h, r1*h)
	if err := k.Barrier(b, "fused seq-parallel inputs staged"); err != nil {
		return err
	}
	tmp, base := k.Tmp(k.Rank()), off/h
	var srcs [device.MaxNodeDevices][]float32
	t0, t1 := seqRows(k.Rank(), ranks, r0, r1)
	for t := t0; t < t1; t++ {
		for p := range ranks {
			srcs[p] = k.Input(p, off, t*h, (t+1)*h)
		}
		sum, res := tmp[t*h:(t+1)*h], tmp[half+t*h:half+(t+1)*h]
		vec.SumF32(sum, srcs[:ranks])
		copy(res, f.residual[(base+t)*h:(base+t+1)*h])
		vec.AddRMSNorm(sum, res, sum, f.weight, f.shape.Eps)
	}
	if err := k.Barrier(b, "fused seq-parallel rows normalized"); err != nil {
		return err
	}
	for p := range ranks {
		tmp := k.Tmp(p)
		t0, t1 := seqRows(p, ranks, r0, r1)
		copy(f.out[off+t0*h:off+t1*h], tmp[t0*h:t1*h])
		copy(f.residual[off+t0*h:off+t1*h], tmp[half+t0*h:half+t1*h])
	}
	return nil
}

// seqRows is the rows [t0, t1) of a block's rows [r0, r1) that rank p of n reduces and
// normalizes.
func seqRows(p, n, r0, r1 int) (t0, t1 int) {
	m := r1 - r0
	return r0 + m*p/n, r0 + m*(p+1)/n
}
