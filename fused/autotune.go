package fused

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// TuneOptions bounds a fused autotuning run.
type TuneOptions struct {
	// Hidden is the model's hidden size: the row length every call measured has.
	Hidden int
	// MaxTokens bounds the token buckets measured: 1, 2, 4, … up to the bucket of MaxTokens.
	MaxTokens int
	// Eps is the RMSNorm epsilon (default 1e-5; it changes no timing).
	Eps float32
	// Measure says how long each variant runs per bucket (Target, MinIters, Rounds, Budget
	// and Warmup, with comm's autotuner's defaults; Op and Prune are not used).
	Measure comm.MeasureOptions
}

func (o TuneOptions) withDefaults() TuneOptions {
	o.MaxTokens = max(o.MaxTokens, 1)
	if !(o.Eps > 0) {
		o.Eps = 1e-5
	}
	o.Measure = o.Measure.TuneDefaults()
	return o
}

// Fingerprint names what a fused table tuned on c for rows of hidden f32 values depends on:
// comm's fingerprint of the node and communicator, the hidden size, and the variants there
// are to measure (a table tuned before one was added never measured it).
func Fingerprint(c *comm.Communicator, hidden int) string {
	return fmt.Sprintf("%s/fused-hidden%d-%d-variants", c.Fingerprint(dtype.F32), hidden, len(Variants))
}

// candidates returns the variants Autotune measures on c: every real variant, less NVLS
// where the fabric has no multicast switch.
func candidates(c *comm.Communicator) []Variant {
	var vs []Variant
	for _, v := range Variants {
		if v != NVLS || c.HasNVLS() {
			vs = append(vs, v)
		}
	}
	return vs
}

// Autotune measures every candidate variant on c at 1, 2, 4, … tokens up to MaxTokens'
// bucket, rows of Hidden f32 values (interleaved rounds, each variant keeping its best
// round, as comm.Communicator.Measure does, but each call timed to completion), and returns the table of the fastest per
// bucket among the variants whose result was correct: every rank's residual and output
// bitwise those of the reference loop (the partials summed in rank order, then
// vec.AddRMSNorm). A variant summing in another order (the tree; unfused over a ring)
// fails that check and is not picked, so a tuned table never changes a model's numbers
// and a sequence's bits never depend on its batch's token bucket. streams holds one stream
// per rank.
func Autotune(c *comm.Communicator, streams []*device.Stream, o TuneOptions) (*Table, error) {
	o = o.withDefaults()
	if o.Hidden < 1 || o.Hidden > c.ChunkCapacity(4) {
		return nil, fmt.Errorf("fused: autotune: hidden size %d, want 1 to %d (a row must fit the registered buffer)", o.Hidden, c.ChunkCapacity(4))
	}
	if len(streams) != c.Size() {
		return nil, fmt.Errorf("fused: autotune: %d streams for %d ranks", len(streams), c.Size())
	}
	lo, hi := TokenBucket(1), TokenBucket(o.MaxTokens)
	b, err := newTuneBuffers(c, int(comm.BucketBytes(hi))*o.Hidden, o.Hidden)
	if err != nil {
		return nil, err
	}
	defer b.free()
	variants := candidates(c)
	table := &Table{Source: "tuned:" + Fingerprint(c, o.Hidden), Hidden: o.Hidden}
	for bucket := lo; bucket <= hi; bucket++ {
		sh := Shape{Tokens: int(comm.BucketBytes(bucket)), Hidden: o.Hidden, Eps: o.Eps}
		row, err := b.tuneBucket(c, streams, variants, sh, o.Measure)
		if err != nil {
			return nil, err
		}
		row.World, row.Bucket = c.Size(), bucket
		if err := table.Set(row); err != nil {
			return nil, err
		}
	}
	return table, nil
}

// TunedTable returns the fused table cached at path when it was tuned under Fingerprint(c,
// Hidden) and covers every bucket up to MaxTokens; otherwise it autotunes and caches the
// result, under comm.LoadOrTune's policy: a cache tuned for another node, hidden size or
// range is overwritten, a damaged one is kept as path+".damaged"; when t is not nil, err
// is a warning. fresh is true when it tuned.
func TunedTable(path string, c *comm.Communicator, streams []*device.Stream, o TuneOptions) (t *Table, fresh bool, err error) {
	o = o.withDefaults()
	current := func(cached *Table) bool {
		return cached.Source == "tuned:"+Fingerprint(c, o.Hidden) && cached.Hidden == o.Hidden &&
			cached.Covers(c.Size(), TokenBucket(1), TokenBucket(o.MaxTokens))
	}
	return comm.LoadOrTune(path, current, func() (*Table, error) { return Autotune(c, streams, o) })
}

// tuneBuffers are one call's buffers per rank, at the largest bucket, and the inputs every
// measurement starts from.
type tuneBuffers struct {
	partial, residual, weight, out []*device.Buffer
	residual0                      []float32 // the residual before any call (same on every rank)
}

func newTuneBuffers(c *comm.Communicator, count, hidden int) (*tuneBuffers, error) {
	b := &tuneBuffers{}
	for r := range c.Size() {
		d := c.Rank(r).Device()
		for _, l := range []struct {
			list *[]*device.Buffer
			n    int
		}{{&b.partial, count}, {&b.residual, count}, {&b.weight, hidden}, {&b.out, count}} {
			buf, err := d.Alloc(dtype.F32, l.n)
			if err != nil {
				b.free()
				return nil, fmt.Errorf("fused: autotune: rank %d: %w", r, err)
			}
			*l.list = append(*l.list, buf)
		}
	}
	comm.Fill(b.partial, count, 1)
	comm.Fill(b.residual[:1], count, 2)
	comm.Fill(b.weight[:1], hidden, 3)
	for r := 1; r < c.Size(); r++ {
		copy(b.residual[r].Float32s(), b.residual[0].Float32s())
		copy(b.weight[r].Float32s(), b.weight[0].Float32s())
	}
	b.residual0 = slices.Clone(b.residual[0].Float32s())
	return b, nil
}

func (b *tuneBuffers) free() {
	for _, l := range [][]*device.Buffer{b.partial, b.residual, b.weight, b.out} {
		for _, buf := range l {
			_ = buf.Free()
		}
	}
}

// run issues iters calls of v on every rank, one at a time, and returns the wall time per
// call. Each call waits for the last to finish on every rank: in a decoder layer the call
// depends on the GEMM that depends on the call before, so what counts is a call's latency,
// not the throughput of calls queued back to back (which favours the variant with the
// least total work on a node whose ranks share cores).
func (b *tuneBuffers) run(c *comm.Communicator, streams []*device.Stream, v Variant, sh Shape, iters int) (time.Duration, error) {
	start := time.Now()
	for i := range iters {
		for r := range c.Size() {
			if err := AllReduceAddRMSNorm(c.Rank(r), streams[r], v, b.partial[r], b.residual[r], b.weight[r], b.out[r], sh); err != nil {
				if i == 0 && r == 0 {
					return 0, refusedError{err} // nothing was launched on any rank
				}
				return 0, err
			}
		}
		for r, s := range streams {
			if err := s.Synchronize(); err != nil {
				return 0, fmt.Errorf("fused: autotune %v at %d tokens: rank %d: %w", v, sh.Tokens, r, err)
			}
		}
	}
	return time.Since(start) / time.Duration(max(iters, 1)), nil
}

// refusedError is a variant's refusal of a shape (a row too long for its buffers), which
// every rank would give alike: the variant is left out of that bucket, and nothing waits.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }

// correct runs v once from the initial residual and reports whether every rank's residual
// and output are bitwise the reference loop's.
func (b *tuneBuffers) correct(c *comm.Communicator, streams []*device.Stream, v Variant, sh Shape) (bool, error) {
	count, h := sh.Tokens*sh.Hidden, sh.Hidden
	for _, res := range b.residual {
		copy(res.Float32s()[:count], b.residual0[:count])
	}
	if _, err := b.run(c, streams, v, sh, 1); err != nil {
		return false, err
	}
	wantRes, wantOut := slices.Clone(b.residual0[:count]), make([]float32, count)
	srcs := make([][]float32, c.Size())
	for r, p := range b.partial {
		srcs[r] = p.Float32s()[:count]
	}
	vec.SumF32(wantOut, srcs)
	w := b.weight[0].Float32s()[:h]
	for t := range sh.Tokens {
		row := wantOut[t*h : (t+1)*h]
		vec.AddRMSNorm(row, wantRes[t*h:(t+1)*h], row, w, sh.Eps)
	}
	for r := range c.Size() {
		if !slices.Equal(b.residual[r].Float32s()[:count], wantRes) || !slices.Equal(b.out[r].Float32s()[:count], wantOut) {
			return false, nil
		}
	}
	return true, nil
}

// tuneBucket checks every variant at shape sh (one that refuses the shape is left out),
// then times the correct ones in interleaved
// rounds (rotating order, an untimed call before each timed run), each keeping its best.
// It errors when no variant ran correctly.
func (b *tuneBuffers) tuneBucket(c *comm.Communicator, streams []*device.Stream, variants []Variant, sh Shape, m comm.MeasureOptions) (TableRow, error) {
	var ok []Variant
	for _, v := range variants {
		good, err := b.correct(c, streams, v, sh)
		if errors.As(err, new(refusedError)) {
			continue
		}
		if err != nil {
			return TableRow{}, fmt.Errorf("fused: autotune: %w", err)
		}
		if good {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return TableRow{}, fmt.Errorf("fused: autotune at %d tokens × %d: no variant of %v matched the reference", sh.Tokens, sh.Hidden, variants)
	}
	once := make([]time.Duration, len(ok))
	for i, v := range ok {
		d, err := b.run(c, streams, v, sh, m.Warmup)
		if err != nil {
			return TableRow{}, err
		}
		once[i] = max(d, time.Nanosecond)
	}
	best, spent := slices.Clone(once), make([]time.Duration, len(ok))
	for round := range m.Rounds {
		for k := range ok {
			i := (k + round) % len(ok)
			if spent[i] >= m.Budget {
				continue
			}
			iters := max(1, min(max(m.MinIters, int(m.Target/once[i])), int((m.Budget-spent[i])/once[i])))
			start := time.Now()
			if _, err := b.run(c, streams, ok[i], sh, 1); err != nil {
				return TableRow{}, err
			}
			d, err := b.run(c, streams, ok[i], sh, iters)
			if err != nil {
				return TableRow{}, err
			}
			spent[i] += time.Since(start)
			best[i] = min(best[i], d)
		}
	}
	row := TableRow{Choice: ok[slices.Index(best, slices.Min(best))], MicrosPerCall: map[string]float64{}}
	for i, v := range ok {
		row.MicrosPerCall[v.String()] = float64(best[i].Nanoseconds()) / 1e3
	}
	return row, nil
}
