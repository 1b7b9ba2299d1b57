package perf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// Choose returns c with its algorithm and protocol filled in as the model picks them,
// and its time: where c.Algo is comm.Auto, the fastest algorithm the profile offers for
// c's ranks and hosts (Offered, ties to the earlier in comm.Offered' order, which
// prefers one-shot); where c.Proto is comm.ProtoAuto and the algorithm takes a protocol,
// the fastest of Simple, LL and LL128 (NCCL's ring: of LL, LL128 and Simple, as its
// tuner). On a profile without a Calibration tpslice's algorithms keep ProtoAuto: the α-β
// model chooses algorithms, not protocols, and compares its times before rounding them to
// the nanosecond. It fails as Time does where nothing is priced.
func (m Costs) Choose(c Collective) (Collective, time.Duration, error) {
	if err := m.checkShape(c); err != nil {
		return c, 0, err
	}
	algos := []comm.Algo{c.Algo}
	switch {
	case m.impl == NCCL:
		algos = []comm.Algo{comm.Ring}
	case c.Algo == comm.Auto:
		algos = comm.Offered(m.p.Fabric, m.p.NVLS, c.Hosts, max(c.Ranks, 1))
	}
	var (
		best, found = c, false
		bestT       time.Duration
		bestExact   float64
		errs        []error
	)
	for _, a := range algos {
		for _, proto := range m.protosOf(a, c.Proto) {
			try := c
			try.Algo, try.Proto = a, proto
			t, exact, err := m.price(try)
			switch {
			case err != nil:
				errs = append(errs, err)
			case !found || t < bestT || t == bestT && exact < bestExact:
				best, found, bestT, bestExact = try, true, t, exact
			}
		}
	}
	if !found {
		return c, 0, fmt.Errorf("perf: nothing to choose for %s over %d ranks: %w", c.Op, c.Ranks, errors.Join(errs...))
	}
	return best, bestT, nil
}

// protosOf lists the protocols Choose tries for algorithm a: proto where given, NCCL's in
// its tuner's order, tpslice's on a calibrated profile for an algorithm that takes one;
// else ProtoAuto, the algorithm's default.
func (m Costs) protosOf(a comm.Algo, proto comm.Proto) []comm.Proto {
	switch {
	case proto != comm.ProtoAuto:
		return []comm.Proto{proto}
	case m.impl == NCCL:
		return comm.Protos
	case m.p.Calibration != nil && comm.TakesProto(a):
		return []comm.Proto{comm.Simple, comm.LL, comm.LL128}
	}
	return []comm.Proto{comm.ProtoAuto}
}

// Offered is the tpslice algorithms profile p offers at world size n over hosts hosts (0
// or 1: one), in comm.Algos order on one host and comm.Offered' across hosts.
func Offered(p hw.Profile, hosts, n int) []comm.Algo {
	offered := comm.Offered(p.Fabric, p.NVLS, hosts, max(n, 1))
	if hosts > 1 {
		return offered
	}
	return slices.DeleteFunc(slices.Clone(comm.Algos), func(a comm.Algo) bool { return !slices.Contains(offered, a) })
}

// ModelTable is the selection table the model gives profile p for TP groups over hosts
// hosts (0 or 1: one; the table records more, comm.Table.Hosts, so that a communicator of
// another node does not consult it): for each world size in worlds that splits evenly
// over the hosts and each size bucket up to maxBytes' bucket, the all-reduce Choose picks
// at the bucket's upper bound (comm.BucketBytes). It is what `--select model:PROFILE` runs.
func ModelTable(p hw.Profile, hosts int, worlds []int, maxBytes int64) *comm.Table {
	m := CostsOf(p, TPSlice)
	t := &comm.Table{Source: "model:" + p.Name}
	if hosts > 1 {
		t.Hosts = hosts
	}
	ws := slices.Clone(worlds)
	slices.Sort(ws)
	for _, n := range slices.Compact(ws) {
		if n < 1 || hosts > 1 && n%hosts != 0 {
			continue
		}
		for b := 0; b <= comm.Bucket(maxBytes); b++ {
			c, _, err := m.Choose(Collective{Op: device.OpAllReduce, Ranks: n, Hosts: hosts, Bytes: comm.BucketBytes(b)})
			if err == nil {
				_ = t.Set(comm.TableRow{World: n, Bucket: b, Choice: comm.Choice{Algo: c.Algo, Proto: c.Proto}}) // cannot fail: n ≥ 1, b in range, a real algorithm
			}
		}
	}
	return t
}
