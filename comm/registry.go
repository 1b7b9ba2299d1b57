package comm

import (
	"slices"
	"strings"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// The all-reduce algorithms, each described once. An algorithm is a row of algoTable:
// its name, where it is offered, what it needs of the communicator, which protocols and
// wires it runs, its kernels and its cost shape. String, ParseAlgo, Algos, HostAlgos,
// Available, TakesProto, Wire.Supports, Offered, the all-reduce's dispatch and perf's α-β
// model read the row; adding an algorithm is adding a row (and its Algo constant).

// kernelBody is a collective's work on one block of a chunk's kernel: the block's share of
// the count elements of the chunk at element off (call.runBlock).
type kernelBody = func(cl *call, b device.Block, off, count int) error

// need is what an algorithm needs of the communicator beyond the peer buffers every
// communicator has.
type need uint8

const (
	needNothing   need = iota
	needMulticast      // a multicast object over the staging buffers: a switch spanning the ranks
	needHosts          // the ranks split evenly over two hosts or more (hostLayout)
)

// offer is where a cost model may price an algorithm (Offered, Offered); a forced
// algorithm runs wherever its need is met.
type offer struct {
	oneHost bool // offered on a node of one host
	hosts   bool // offered on a node of several hosts
	// pcie: offered on a PCIe fabric beyond two ranks a host, where vLLM's rule keeps out
	// the algorithms that read every peer's buffer.
	pcie bool
	// tie is the place in the tie-break order: a model picks the first of equally fast
	// algorithms.
	tie int
}

// Cost is an all-reduce algorithm's shape in the α-β model (DESIGN.md), which package perf
// prices: Steps(n) steps of α (a sync and a launch) each and Bytes(n, S) bytes over each
// rank's link, for S bytes a rank over n ≥ 2 ranks, so a call takes
// Steps(n)·α + Bytes(n, S)/β. One rank communicates nothing and costs 0.
type Cost struct {
	Steps func(n int) float64
	Bytes func(n int, s float64) float64
}

// algoSpec describes one all-reduce algorithm.
type algoSpec struct {
	name string // on command lines, in tables and in JSON
	doc  string // one line for help texts
	offer
	needs need
	// wires: it runs the low-precision wires (Config.Wire); the others keep their own
	// buffer formats.
	wires bool
	// fused: package fused has its fused form, the all-reduce + residual + RMSNorm variant
	// of its name, which Auto runs where the all-reduce would run it (fused.Select).
	fused bool
	// body is its kernel.
	body kernelBody
	// protos: body is a schedule written over the protocol primitives (prims.go), which
	// runs under LL, LL128 or Simple as the call's Proto says (TakesProto); the others have
	// their own synchronisation.
	protos bool
	// chunk is the most elements of t one kernel of a call takes: what its registered
	// buffers hold.
	chunk func(cfg *Config, t dtype.DType) int
	// beginChunk, where set, runs as the prologue of each chunk's kernel, before its blocks.
	beginChunk func(cl *call, count int)
	// graphInPlace: once a captured graph's buffers are registered (RegisterGraphBuffers),
	// its kernels read the peers' inputs in place instead of staging them. NVLS reduces
	// through the multicast object, which binds the staging buffers; the ring, the tree and
	// the flag-free one-shot keep their own buffers; the star, a baseline, stages as the
	// seed did.
	graphInPlace bool
	// cost is its α-β shape; zero where the model does not price it (perf prices the
	// two-level all-reduce by its phases).
	cost Cost
	// baseline: a reference the others are measured against, run only when named (--algo,
	// $TPSLICE_ALLREDUCE_ALGO, a table written by hand): never offered, never autotuned.
	baseline bool
}

// algoTable holds every all-reduce algorithm, indexed by Algo; Auto has no row. It is
// never written.
var algoTable = [...]algoSpec{
	Ring: {
		name:   "ring",
		doc:    "reduce-scatter + all-gather around a ring, 2(n-1) steps (NCCL's shape)",
		offer:  offer{oneHost: true, hosts: true, pcie: true, tie: 4},
		body:   (*call).ring,
		protos: true,
		chunk:  partialSumChunk,
		cost:   Cost{Steps: func(n int) float64 { return 2 * (float64(n) - 1) }, Bytes: twoPassBytes},
	},
	OneShot: {
		name:         "oneshot",
		doc:          "every rank reads all n inputs and sums them; best for small messages",
		offer:        offer{oneHost: true, hosts: true, tie: 1},
		wires:        true,
		fused:        true,
		body:         (*call).oneShot,
		chunk:        stagedChunk,
		graphInPlace: true,
		cost:         oneShotCost,
	},
	TwoShot: {
		name:         "twoshot",
		doc:          "reduce-scatter then all-gather through peer buffers; medium and large messages",
		offer:        offer{oneHost: true, hosts: true, tie: 3},
		wires:        true,
		fused:        true,
		body:         (*call).twoShot,
		chunk:        stagedChunk,
		graphInPlace: true,
		cost:         Cost{Steps: func(int) float64 { return 4 }, Bytes: twoPassBytes},
	},
	NVLS: {
		name:  "nvls",
		doc:   "switch-side reduction through a multicast object (emulated here)",
		offer: offer{oneHost: true, tie: 2},
		needs: needMulticast,
		fused: true,
		body:  (*call).nvls,
		chunk: stagedChunk,
		cost:  Cost{Steps: func(int) float64 { return 2 }, Bytes: func(_ int, s float64) float64 { return s }},
	},
	// Never offered: it moves one-shot's bytes (so the model prices it as one-shot), and
	// ties go to one-shot.
	Lamport: {
		name:       "lamport",
		doc:        "flag-free one-shot: −0.0 sentinels, triple-buffered (TensorRT-LLM)",
		body:       (*call).lamport,
		chunk:      lamportChunk,
		beginChunk: (*call).lamportBeginChunk,
		cost:       oneShotCost,
	},
	// Not offered across hosts, where its edges cross hosts as its levels do: the model
	// does not price that.
	Tree: {
		name:   "tree",
		doc:    "NCCL's double binary tree: reduce up two trees, broadcast down, pipelined",
		offer:  offer{oneHost: true, tie: 5},
		fused:  true,
		body:   (*call).tree,
		protos: true,
		chunk:  partialSumChunk,
		cost: Cost{
			Steps: func(n int) float64 { return 2 * float64(TreeDepth(n)) },
			Bytes: func(_ int, s float64) float64 { return 2 * s },
		},
	},
	TwoLevel: {
		name:  "twolevel",
		doc:   "hierarchical: reduce-scatter in each host, all-reduce across hosts, all-gather in each host",
		offer: offer{hosts: true, pcie: true, tie: 0},
		needs: needHosts,
		body:  (*call).twoLevel,
		chunk: partialSumChunk,
	},
	// The seed's all-reduce, kept as a baseline that Auto never runs: rank 0 reduces alone
	// and its link carries every byte twice, so it never beats one-shot. No fused form: rank
	// 0 serialises the reduction, so fusing the norm into it buys nothing over the unfused pair.
	Star: {
		name:     "star",
		doc:      "every rank's input to rank 0, which sums them in rank order and broadcasts (the seed's baseline)",
		baseline: true,
		body:     (*call).star,
		chunk:    stagedChunk,
		// 3α + 2(n-1)·S/β: three hops (staged, reduced, read); rank 0's link takes (n-1)·S in, then sends (n-1)·S.
		cost: Cost{
			Steps: func(int) float64 { return 3 },
			Bytes: func(n int, s float64) float64 { return 2 * (float64(n) - 1) * s },
		},
	},
}

// oneShotCost is 2α + (n-1)·S/β: stage, barrier, read every peer, barrier.
var oneShotCost = Cost{
	Steps: func(int) float64 { return 2 },
	Bytes: func(n int, s float64) float64 { return (float64(n) - 1) * s },
}

// twoPassBytes is what a reduce-scatter then an all-gather move: 2(n-1)/n·S.
func twoPassBytes(n int, s float64) float64 {
	nf := float64(n)
	return 2 * (nf - 1) / nf * s
}

// stagedChunk is a chunk that fills a staging buffer with the call's dtype.
func stagedChunk(cfg *Config, t dtype.DType) int { return cfg.BufferBytes / t.Size() }

// partialSumChunk is a chunk of f32 partial sums, whatever the call's dtype.
func partialSumChunk(cfg *Config, _ dtype.DType) int { return cfg.BufferBytes / 4 }

// spec returns a's row; ok is false for Auto and unknown values.
func (a Algo) spec() (*algoSpec, bool) {
	if int(a) >= len(algoTable) || algoTable[a].name == "" {
		return nil, false
	}
	return &algoTable[a], true
}

// algosWhere lists, in Algo order, the algorithms whose row keep reports.
func algosWhere(keep func(*algoSpec) bool) []Algo {
	var out []Algo
	for a := range algoTable {
		if s := &algoTable[a]; s.name != "" && keep(s) {
			out = append(out, Algo(a))
		}
	}
	return out
}

// AlgoNames lists, in Algo order, the names of the algorithms keep reports (nil keeps
// every one), as "ring, oneshot or tree", for help texts and errors.
func AlgoNames(keep func(Algo) bool) string {
	all := algosWhere(func(*algoSpec) bool { return true })
	if keep != nil {
		all = slices.DeleteFunc(all, func(a Algo) bool { return !keep(a) })
	}
	return nameList(all, "or")
}

// nameList writes the algorithms' names as "ring, oneshot <conj> tree".
func nameList(algos []Algo, conj string) string {
	names := make([]string, len(algos))
	for i, a := range algos {
		names[i] = a.String()
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// readsGraphInputs reports whether a's kernels read the peers' inputs in place once a
// captured graph registers them (graphInPlace).
func (a Algo) readsGraphInputs() bool {
	s, ok := a.spec()
	return ok && s.graphInPlace
}

// takesProto reports whether the algorithm runs under a choice of protocol.
func (s *algoSpec) takesProto() bool { return s.protos }

// Doc returns the algorithm's one-line description, for help texts; "" for Auto and
// unknown values.
func (a Algo) Doc() string {
	if s, ok := a.spec(); ok {
		return s.doc
	}
	return ""
}

// Fused reports whether package fused has the algorithm's fused form: the all-reduce +
// residual + RMSNorm variant of its name. The ring, the flag-free one-shot, the two-level
// all-reduce and the star have none and run unfused (all-reduce, then the norm kernel).
func (a Algo) Fused() bool {
	s, ok := a.spec()
	return ok && s.fused
}

// Baseline reports whether the algorithm is a baseline, a reference the others are measured
// against that runs only when named: no model is offered it, Autotune skips it, and a
// benchmark's "all" leaves it out.
func (a Algo) Baseline() bool {
	s, ok := a.spec()
	return ok && s.baseline
}

// Cost returns the algorithm's shape in the α-β model; ok is false for Auto, unknown
// values, and the two-level all-reduce, which perf prices by its phases.
func (a Algo) Cost() (cost Cost, ok bool) {
	if s, found := a.spec(); found && s.cost.Steps != nil {
		return s.cost, true
	}
	return Cost{}, false
}

// Offered returns the algorithms a node of fabric f (with multicast, NVLS, where
// nvls) runs at n ranks split evenly over hosts hosts (0 or 1: one host), in tie-break
// preference order (a model picks the first of equally fast ones). On one host: one-shot,
// NVLS, two-shot, ring, tree. On several: the two-level all-reduce first, then the flat
// one-shot, two-shot and ring, which a model must price with their hops across hosts (perf
// does); no multicast crosses hosts, so NVLS is not offered, nor the tree, whose edges
// cross hosts where its levels do. On PCIe with more than two ranks a host only the ring
// (and across hosts the two-level all-reduce) is offered: vLLM's rule keeps the
// peer-buffer algorithms out (the tree, which reads its parent's and children's buffers,
// with them). Lamport is never offered: it moves one-shot's bytes, and ties go to one-shot;
// nor is a baseline.
func Offered(f device.Fabric, nvls bool, hosts, n int) []Algo {
	several, perHost := hosts > 1, n/max(hosts, 1)
	out := algosWhere(func(s *algoSpec) bool {
		switch {
		case several && !s.hosts, !several && !s.oneHost:
			return false
		case f == device.PCIe && perHost > 2 && !s.pcie:
			return false
		}
		return s.needs != needMulticast || nvls && !several
	})
	slices.SortFunc(out, func(a, b Algo) int { return algoTable[a].tie - algoTable[b].tie })
	return out
}
