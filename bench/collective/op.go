package collective

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// Op is the collective allreduce-bench measures (--op) and how its sizes, buffers,
// checks and bus bandwidth follow nccl-tests: for reduce-scatter and all-gather the size
// is the whole n·count buffer (the input of a reduce-scatter, the output of an
// all-gather), count its elements, and busbw = algbw·(n-1)/n.
type Op struct {
	Kind device.CollectiveOp
	N    int // ranks
}

// ParseOp reads --op for n ranks.
func ParseOp(name string, n int) (Op, error) {
	switch op := device.CollectiveOp(name); op {
	case device.OpAllReduce, device.OpReduceScatter, device.OpAllGather:
		return Op{Kind: op, N: n}, nil
	}
	return Op{}, fmt.Errorf("--op: want allreduce, reducescatter or allgather, got %q", name)
}

// AllReduce reports whether b is the all-reduce.
func (b Op) AllReduce() bool { return b.Kind == device.OpAllReduce }

// Algos reads --algo: the all-reduce's parseAlgos, or for reduce-scatter and all-gather
// their two algorithms ("all": oneshot, the direct one, and ring, then auto).
func (b Op) Algos(spec string, fabric device.Fabric, hosts int) ([]comm.Algo, error) {
	if b.AllReduce() {
		return parseAlgos(spec, fabric, hosts)
	}
	own := []comm.Algo{comm.OneShot, comm.Ring}
	if spec == "all" {
		return append(own, comm.Auto), nil
	}
	algos, err := parseAlgos(spec, fabric, 1)
	for _, a := range algos {
		if a != comm.Auto && !slices.Contains(own, a) {
			return nil, fmt.Errorf("--algo: %s runs oneshot (direct) or ring, not %v", b.Kind, a)
		}
	}
	return algos, err
}

// Sizes keeps the sizes that hold a whole number of elements on every rank, rounded down.
func (b Op) Sizes(sizes []int64, t dtype.DType) ([]int64, error) {
	if b.AllReduce() {
		return sizes, nil
	}
	unit := int64(b.N * t.Size())
	var out []int64
	for _, s := range sizes {
		if s = s / unit * unit; s > 0 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--end: %s needs at least n·%d = %d bytes", b.Kind, t.Size(), unit)
	}
	return out, nil
}

// PerRank is the count a size gives each rank's call: its elements, or for reduce-scatter
// and all-gather 1/n of them.
func (b Op) PerRank(size int64, t dtype.DType) int {
	if b.AllReduce() {
		return int(size) / t.Size()
	}
	return int(size) / t.Size() / b.N
}

// lens is how many elements the input and output of a call of count hold.
func (b Op) lens(count int) (in, out int) {
	switch b.Kind {
	case device.OpReduceScatter:
		return b.N * count, count
	case device.OpAllGather:
		return count, b.N * count
	}
	return count, count
}

// wrong counts --check's wrong elements.
func (b Op) wrong(ins, outs []*device.Buffer, count int) int {
	switch b.Kind {
	case device.OpReduceScatter:
		return comm.CountWrongReduceScatter(ins, outs, count)
	case device.OpAllGather:
		return comm.CountWrongAllGather(ins, outs, count)
	}
	return comm.CountWrong(ins, outs, count)
}

// auto is what an Auto call of count elements of t runs on c.
func (b Op) auto(c *comm.Communicator, count int, t dtype.DType) comm.Choice {
	if b.AllReduce() {
		return c.Pick(c.MessageBytes(count, t)) // the bytes on the communicator's wire
	}
	return comm.Choice{Algo: c.AllGatherAlgo()} // reduce-scatter follows the same rule
}

// Choices pairs the all-reduce's ring and tree with each of protos (withProtos); the other
// collectives, and an all-reduce without protos, run each algorithm as it is.
func (b Op) Choices(algos []comm.Algo, protos []comm.Proto) []comm.Choice {
	if b.AllReduce() && protos != nil {
		return withProtos(algos, protos)
	}
	out := make([]comm.Choice, len(algos))
	for i, a := range algos {
		out[i] = comm.Choice{Algo: a}
	}
	return out
}

// SizeRange lists the message sizes from begin to end, multiplying by factor, each a whole
// number of elements.
func SizeRange(begin, end int64, factor int, t dtype.DType) ([]int64, error) {
	es := int64(t.Size())
	switch {
	case factor < 2:
		return nil, fmt.Errorf("--factor: want at least 2, got %d", factor)
	case begin < es:
		return nil, fmt.Errorf("--begin: %d bytes is less than one %v element", begin, t)
	case end < begin:
		return nil, fmt.Errorf("--end (%d) is smaller than --begin (%d)", end, begin)
	}
	var sizes []int64
	for s := begin; s <= end; s *= int64(factor) {
		sizes = append(sizes, s/es*es)
	}
	return sizes, nil
}

// ParseProtos reads --proto; "all" lists every protocol.
func ParseProtos(spec string) ([]comm.Proto, error) {
	if spec == "all" {
		return comm.Protos, nil
	}
	var out []comm.Proto
	for _, name := range strings.Split(spec, ",") {
		p, err := comm.ParseProto(name)
		if err != nil {
			return nil, fmt.Errorf("--proto: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// withProtos pairs every algorithm that takes a protocol (ring, tree) with each of protos,
// and every other one with none.
func withProtos(algos []comm.Algo, protos []comm.Proto) []comm.Choice {
	var out []comm.Choice
	for _, a := range algos {
		if !comm.TakesProto(a) {
			out = append(out, comm.Choice{Algo: a})
			continue
		}
		for _, p := range protos {
			out = append(out, comm.Choice{Algo: a, Proto: p})
		}
	}
	return out
}

// parseAlgos reads --algo; "all" lists every algorithm the fabric offers (over hosts,
// without NVLS and with the two-level all-reduce) but the baselines, which run only when
// named, then auto.
func parseAlgos(spec string, fabric device.Fabric, hosts int) ([]comm.Algo, error) {
	multicast := fabric.HasMulticast() && hosts <= 1
	if spec == "all" {
		var out []comm.Algo
		for _, a := range comm.Algos {
			if (a != comm.NVLS || multicast) && !a.Baseline() {
				out = append(out, a)
			}
		}
		if hosts > 1 {
			out = append(out, comm.HostAlgos...)
		}
		return append(out, comm.Auto), nil
	}
	var out []comm.Algo
	for _, name := range strings.Split(spec, ",") {
		a, err := comm.ParseAlgo(name)
		if err != nil {
			return nil, fmt.Errorf("--algo: %w", err)
		}
		if a == comm.NVLS && !multicast {
			if hosts > 1 {
				return nil, fmt.Errorf("--algo: nvls needs the nvswitch fabric of one host; multicast does not cross %d hosts", hosts)
			}
			return nil, fmt.Errorf("--algo: nvls needs the nvswitch fabric, not %v", fabric)
		}
		out = append(out, a)
	}
	return out, nil
}

// WireAlgos keeps, of algos, those that run wire w: of all the algorithms (all) one-shot,
// two-shot and auto; an algorithm named that does not run w is an error.
func WireAlgos(algos []comm.Algo, w comm.Wire, all bool) ([]comm.Algo, error) {
	var out []comm.Algo
	for _, a := range algos {
		switch {
		case w.Supports(a):
			out = append(out, a)
		case !all:
			return nil, fmt.Errorf("--algo %v does not run --allreduce-dtype %v (oneshot, twoshot and auto do)", a, w)
		}
	}
	return out, nil
}

// ParseOpOver is ParseOp for ranks split evenly over hosts hosts (up to device.MaxDevices
// a host) on wire w: only the all-reduce crosses hosts or runs a compressed wire. The
// error names the flag: --ranks, --hosts, --op or --allreduce-dtype.
func ParseOpOver(name string, ranks, hosts int, w comm.Wire) (Op, error) {
	switch {
	case hosts > 1 && (ranks < hosts || ranks%hosts != 0 || ranks/hosts > device.MaxDevices):
		return Op{}, fmt.Errorf("--ranks %d over --hosts %d: want a multiple of %d up to %d", ranks, hosts, hosts, hosts*device.MaxDevices)
	case hosts < 1:
		return Op{}, fmt.Errorf("--hosts: want at least 1, got %d", hosts)
	case hosts == 1 && (ranks < 1 || ranks > device.MaxDevices):
		return Op{}, fmt.Errorf("--ranks: want 1 to %d, got %d", device.MaxDevices, ranks)
	}
	op, err := ParseOp(name, ranks)
	switch {
	case err != nil:
		return Op{}, err
	case hosts > 1 && !op.AllReduce():
		return Op{}, fmt.Errorf("--op %s over --hosts %d: only the all-reduce is modelled across hosts", op.Kind, hosts)
	case w != comm.WireExact && !op.AllReduce():
		return Op{}, fmt.Errorf("--op %s: --allreduce-dtype %v is the all-reduce's wire; %s runs exact", op.Kind, w, op.Kind)
	}
	return op, nil
}
