package main

import (
	"fmt"
	"slices"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// benchOp is the collective allreduce-bench measures (--op) and how its sizes, buffers,
// checks and bus bandwidth follow nccl-tests: for reduce-scatter and all-gather the size
// is the whole n·count buffer (the input of a reduce-scatter, the output of an
// all-gather), count its elements, and busbw = algbw·(n-1)/n.
type benchOp struct {
	op device.CollectiveOp
	n  int
}

func parseBenchOp(name string, n int) (benchOp, error) {
	switch op := device.CollectiveOp(name); op {
	case device.OpAllReduce, device.OpReduceScatter, device.OpAllGather:
		return benchOp{op: op, n: n}, nil
	}
	return benchOp{}, fmt.Errorf("--op: want allreduce, reducescatter or allgather, got %q", name)
}

func (b benchOp) allReduce() bool { return b.op == device.OpAllReduce }

// algos reads --algo: the all-reduce's parseAlgos, or for reduce-scatter and all-gather
// their two algorithms ("all": oneshot, the direct one, and ring, then auto).
func (b benchOp) algos(spec string, fabric device.Fabric, hosts int) ([]comm.Algo, error) {
	if b.allReduce() {
		return parseAlgos(spec, fabric, hosts)
	}
	own := []comm.Algo{comm.OneShot, comm.Ring}
	if spec == "all" {
		return append(own, comm.Auto), nil
	}
	algos, err := parseAlgos(spec, fabric, 1)
	for _, a := range algos {
		if a != comm.Auto && !slices.Contains(own, a) {
			return nil, fmt.Errorf("--algo: %s runs oneshot (direct) or ring, not %v", b.op, a)
		}
	}
	return algos, err
}

// sizes keeps the sizes that hold a whole number of elements on every rank, rounded down.
func (b benchOp) sizes(sizes []int64, t dtype.DType) ([]int64, error) {
	if b.allReduce() {
		return sizes, nil
	}
	unit := int64(b.n * t.Size())
	var out []int64
	for _, s := range sizes {
		if s = s / unit * unit; s > 0 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--end: %s needs at least n·%d = %d bytes", b.op, t.Size(), unit)
	}
	return out, nil
}

// perRank is the count a size gives each rank's call: its elements, or for reduce-scatter
// and all-gather 1/n of them.
func (b benchOp) perRank(size int64, t dtype.DType) int {
	if b.allReduce() {
		return int(size) / t.Size()
	}
	return int(size) / t.Size() / b.n
}

// lens is how many elements the input and output of a call of count hold.
func (b benchOp) lens(count int) (in, out int) {
	switch b.op {
	case device.OpReduceScatter:
		return b.n * count, count
	case device.OpAllGather:
		return count, b.n * count
	}
	return count, count
}

// wrong counts --check's wrong elements.
func (b benchOp) wrong(ins, outs []*device.Buffer, count int) int {
	switch b.op {
	case device.OpReduceScatter:
		return comm.CountWrongReduceScatter(ins, outs, count)
	case device.OpAllGather:
		return comm.CountWrongAllGather(ins, outs, count)
	}
	return comm.CountWrong(ins, outs, count)
}

// auto is what an Auto call of count elements of t runs on c.
func (b benchOp) auto(c *comm.Communicator, count int, t dtype.DType) comm.Choice {
	if b.allReduce() {
		return c.PickChoice(c.MessageBytes(count, t)) // the bytes on the communicator's wire
	}
	return comm.Choice{Algo: c.AllGatherAlgo()} // reduce-scatter follows the same rule
}

// choices pairs the all-reduce's ring and tree with each of protos (withProtos); the other
// collectives, and an all-reduce without protos, run each algorithm as it is.
func (b benchOp) choices(algos []comm.Algo, protos []comm.Proto) []comm.Choice {
	if b.allReduce() && protos != nil {
		return withProtos(algos, protos)
	}
	out := make([]comm.Choice, len(algos))
	for i, a := range algos {
		out[i] = comm.Choice{Algo: a}
	}
	return out
}
