package comm

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TuneOptions bounds an autotuning run.
type TuneOptions struct {
	// DType is the element type measured.
	DType dtype.DType
	// MinBytes and MaxBytes bound the size buckets measured (powers of two).
	MinBytes, MaxBytes int64
	// Measure says how long each measurement runs; algorithms far slower than the fastest
	// at a size are pruned after one call (Measure.Prune, default 3).
	Measure MeasureOptions
	// Progress, when set, is told after each bucket.
	Progress func(done, total int)
}

func (o TuneOptions) withDefaults() TuneOptions {
	if o.DType == 0 {
		o.DType = dtype.F32
	}
	es := int64(o.DType.Size())
	o.MinBytes, o.MaxBytes = max(o.MinBytes, es), max(o.MaxBytes, o.MinBytes, es)
	o.Measure = o.Measure.TuneDefaults()
	return o
}

// TuneDefaults fills what o leaves unset with the autotuner's settings: rounds of at least
// 1 ms, 30 rounds, 300 ms per candidate and size, one warm-up call, pruning at 3× the
// fastest. The fused variants' autotuner measures with the same.
func (o MeasureOptions) TuneDefaults() MeasureOptions {
	if o.Target <= 0 {
		o.Target = time.Millisecond
	}
	if o.Rounds <= 0 {
		o.Rounds = 30
	}
	if o.Budget <= 0 {
		o.Budget = 300 * time.Millisecond
	}
	if o.Prune == 0 {
		o.Prune = 3
	}
	o.Warmup = max(o.Warmup, 1)
	return o
}

// Autotune measures every available algorithm but the baselines (tunedAlgos), the ring and
// the tree under every protocol, at every power-of-two size from MinBytes to MaxBytes on
// this communicator (with Measure: interleaved rounds, best round kept) and returns the
// table of the fastest per bucket.
func (c *Communicator) Autotune(streams []*device.Stream, o TuneOptions) (*Table, error) {
	o = o.withDefaults()
	es := int64(o.DType.Size())
	maxCount := int((BucketBytes(Bucket(o.MaxBytes)) + es - 1) / es)
	if c.cfg.Wire != WireExact {
		maxCount = c.countOnWire(BucketBytes(Bucket(o.MaxBytes)), o.DType)
	}
	ins, outs, err := c.benchBuffers(o.DType, maxCount)
	if err != nil {
		return nil, err
	}
	defer freeAll(ins, outs)

	var algos []Algo
	for _, a := range append(slices.Clone(tunedAlgos), HostAlgos...) {
		if c.Available(a) && c.cfg.Wire.Supports(a) {
			algos = append(algos, a)
		}
	}
	choices := Choices(algos)
	table := &Table{Source: "tuned:" + c.Fingerprint(o.DType), Hosts: c.tableHosts()}
	lo, hi := Bucket(o.MinBytes), Bucket(o.MaxBytes)
	for b := lo; b <= hi; b++ {
		count := int(max(1, BucketBytes(b)/es))
		if c.cfg.Wire != WireExact { // Pick looks the wire's bytes up
			count = c.countOnWire(BucketBytes(b), o.DType)
		}
		best, err := c.Measure(streams, choices, ins, outs, count, o.Measure, nil)
		if err != nil {
			return nil, err
		}
		row := TableRow{World: c.n, Bucket: b, Choice: choices[slices.Index(best, slices.Min(best))], MicrosPerCall: map[string]float64{}}
		for i, ch := range choices {
			row.MicrosPerCall[ch.String()] = float64(best[i].Nanoseconds()) / 1e3
		}
		if err := table.Set(row); err != nil {
			return nil, err
		}
		if o.Progress != nil {
			o.Progress(b-lo+1, hi-lo+1)
		}
	}
	return table, nil
}

// TunedTable returns the table cached at path when it was tuned for this communicator's
// fingerprint and covers its world size and the sizes of o; otherwise it autotunes and
// caches the result, under LoadOrTune's policy (a damaged cache is kept as
// path+".damaged"; when t is not nil, err is a warning). fresh is true when it tuned.
func (c *Communicator) TunedTable(path string, streams []*device.Stream, o TuneOptions) (t *Table, fresh bool, err error) {
	o = o.withDefaults()
	current := func(cached *Table) bool {
		return cached.Source == "tuned:"+c.Fingerprint(o.DType) && cached.Covers(c.n, Bucket(o.MinBytes), Bucket(o.MaxBytes))
	}
	return LoadOrTune(path, current, func() (*Table, error) { return c.Autotune(streams, o) })
}

// Fingerprint names what a tuned table depends on: the backend, the machine, the node,
// the communicator's buffers and the algorithms and protocols there are to measure (a
// table tuned before one was added never measured it: a cache from before protocols were a
// choice ends in "-algos" and is tuned again). A table tuned under another fingerprint is
// not reused.
func (c *Communicator) Fingerprint(t dtype.DType) string {
	d0, _ := c.node.Device(0)
	return fmt.Sprintf("cpu-%s-%dcpu-%dprocs/n%d-sm%d-%v/buf%d-lamport%d-blocks%d/%v/%d-algos-%d-protos",
		runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), c.n, d0.NumSMs(), c.node.Fabric(),
		c.cfg.BufferBytes, c.cfg.LamportBytes, c.cfg.Blocks, t, len(tunedAlgos), len(Protos)) + c.hostsTag() + c.wireFingerprint()
}

// tunedAlgos are the algorithms of one host that Autotune measures where they are
// available, in Algos order: all but the baselines, which run only when named.
var tunedAlgos = algosWhere(func(s *algoSpec) bool { return s.needs != needHosts && !s.baseline })

// SetTable replaces the selection table that Auto consults (nil: the built-in rule).
func (c *Communicator) SetTable(t *Table) { c.table.Store(t) }

// benchBuffers allocates one input and one output of count elements per rank.
func (c *Communicator) benchBuffers(t dtype.DType, count int) (ins, outs []*device.Buffer, err error) {
	if len(c.local) != c.n {
		return nil, nil, errNotAllLocal("autotune")
	}
	for _, rk := range c.ranks {
		in, err1 := rk.dev.Alloc(t, count)
		out, err2 := rk.dev.Alloc(t, count)
		ins, outs = append(ins, in), append(outs, out)
		if err := errors.Join(err1, err2); err != nil {
			freeAll(ins, outs)
			return nil, nil, fmt.Errorf("comm: benchmark buffers: %w", err)
		}
	}
	return ins, outs, nil
}

func freeAll(lists ...[]*device.Buffer) {
	for _, l := range lists {
		for _, b := range l {
			if b != nil {
				_ = b.Free()
			}
		}
	}
}
