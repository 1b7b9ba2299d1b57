package models

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// DummyBlock is the number of consecutive columns of a row that DummySource draws from one
// random stream.
const DummyBlock = 256

// DummyStd is the standard deviation of dummy matrix weights; norm weights are
// 1 + DummyStd·N(0, 1).
const DummyStd = 0.02

// DummySource serves deterministic random weights for every tensor of a Config, stored as
// f32. Each block of DummyBlock columns of each row of each tensor comes from its own PCG
// stream seeded by (seed, tensor name, row, block), so any region is generated on its own,
// at the cost of at most one partial block per row edge, and equals the same slice of the
// full tensor: a rank generates only its shard, row- or column-wise. Matrices are
// N(0, DummyStd²); vectors (the norm weights) are 1 + DummyStd·N(0, 1). A 1-D tensor is
// one row.
type DummySource struct {
	cfg    Config
	seed   uint64
	infos  []format.TensorInfo
	byName map[string]format.TensorInfo
	closed atomic.Bool
}

// NewDummy returns dummy weights for cfg drawn from seed.
func NewDummy(cfg Config, seed uint64) (*DummySource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("models: dummy weights: %w", err)
	}
	d := &DummySource{cfg: cfg, seed: seed, infos: cfg.Tensors(dtype.F32), byName: map[string]format.TensorInfo{}}
	for _, t := range d.infos {
		d.byName[t.Name] = t
	}
	sort.Slice(d.infos, func(i, j int) bool { return d.infos[i].Name < d.infos[j].Name })
	return d, nil
}

// Config is the config the weights were generated for.
func (d *DummySource) Config() Config { return d.cfg }

// Seed is the seed the weights are drawn from.
func (d *DummySource) Seed() uint64 { return d.seed }

// String names the source as errors print it.
func (d *DummySource) String() string {
	return fmt.Sprintf("dummy %s (seed %d)", d.cfg.Name, d.seed)
}

// Tensors lists every tensor of the config, sorted by name.
func (d *DummySource) Tensors() []format.TensorInfo {
	out := make([]format.TensorInfo, len(d.infos))
	for i, t := range d.infos {
		t.Shape = slices.Clone(t.Shape)
		out[i] = t
	}
	return out
}

// Tensor returns one tensor's description.
func (d *DummySource) Tensor(name string) (format.TensorInfo, bool) {
	t, ok := d.byName[name]
	t.Shape = slices.Clone(t.Shape)
	return t, ok
}

// Read generates region r of tensor name into dst, rounding to dst's dtype.
func (d *DummySource) Read(name string, r format.Region, dst format.Dest) error {
	t, ok := d.byName[name]
	if !ok {
		return fmt.Errorf("%v: no tensor %s", d, name)
	}
	fail := func(err error) error { return fmt.Errorf("%v: read tensor %s: %w", d, name, err) }
	if d.closed.Load() {
		return fail(errors.New("source is closed"))
	}
	if err := format.CheckRead(t, r, dst); err != nil {
		return fail(err)
	}
	w := r.Col1 - r.Col0
	if w == 0 {
		return nil
	}
	g := newDummyGen(d.seed, t)
	row := make([]float32, w)
	for i := r.Row0; i < r.Row1; i++ {
		g.fill(i, r.Col0, row)
		if err := dst.StoreF32((i-r.Row0)*w, row); err != nil {
			return fail(err)
		}
	}
	return nil
}

// Close marks the source closed; later reads fail.
func (d *DummySource) Close() error {
	d.closed.Store(true)
	return nil
}

// dummyGen draws the values of one tensor.
type dummyGen struct {
	base   uint64 // from the seed and the tensor name
	offset float64
	pcg    *rand.PCG
	rng    *rand.Rand
}

func newDummyGen(seed uint64, t format.TensorInfo) *dummyGen {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	g := &dummyGen{base: splitmix64(seed ^ splitmix64(h.Sum64())), pcg: rand.NewPCG(0, 0)}
	g.rng = rand.New(g.pcg)
	if len(t.Shape) == 1 {
		g.offset = 1
	}
	return g
}

// fill writes columns [c0, c0+len(out)) of row i into out.
func (g *dummyGen) fill(i, c0 int, out []float32) {
	c1 := c0 + len(out)
	for b := c0 / DummyBlock; b*DummyBlock < c1; b++ {
		// Distinct (row, block) keys give distinct stream states: splitmix64 is a bijection.
		key := uint64(i)<<32 | uint64(b)
		hi := splitmix64(g.base ^ splitmix64(key))
		g.pcg.Seed(hi, splitmix64(hi))
		lo, end := b*DummyBlock, min((b+1)*DummyBlock, c1)
		for c := lo; c < end; c++ {
			v := float32(g.offset + DummyStd*g.rng.NormFloat64())
			if c >= c0 {
				out[c-c0] = v
			}
		}
	}
}

// splitmix64 is SplitMix64's finalizer: a bijective mix of 64 bits.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
