package device

import "fmt"

// WorkClass groups kernels by what they do, for per-class time breakdowns and for the
// performance model that prices each class on a GPU.
type WorkClass string

// The kernel classes of a decode step.
const (
	ClassGEMM        WorkClass = "gemm"        // linear layers: weights × activations
	ClassAttention   WorkClass = "attention"   // attention over the KV cache
	ClassCollective  WorkClass = "collective"  // all-reduce and all-gather kernels
	ClassNorm        WorkClass = "norm"        // RMSNorm and residual adds
	ClassElementwise WorkClass = "elementwise" // RoPE, KV cache writes, SwiGLU, copies
	ClassEmbedding   WorkClass = "embedding"   // token embedding lookups
	ClassSampling    WorkClass = "sampling"    // top-k, logits packing
)

// Work describes what one kernel does, as a GPU performance model needs it: the bytes it
// moves through device memory and the floating-point operations it runs. It never changes
// what runs; a kernel without it (Class "") costs a model only its fixed time and launch.
type Work struct {
	Class WorkClass
	// Bytes is the device-memory traffic (reads plus writes) at the storage dtypes of this
	// backend; FLOPs counts a multiply-add as two.
	Bytes, FLOPs int64
	// ContextBytes and ContextFLOPs are added per cached position that the kernel's
	// sequences attend to: attention's cost grows with the context, which a captured graph
	// does not fix.
	ContextBytes, ContextFLOPs int64
	// Collective kernels: Op is the collective, Algo the algorithm it runs and Message the
	// bytes each rank contributes in this kernel. Algo is the collective library's own
	// typed value (comm sets a comm.Algo), so that a price model above the library reads
	// it back with a type assertion, without parsing; device, below the library, only
	// prints it.
	Op      CollectiveOp
	Algo    fmt.Stringer
	Message int64
	// Proto is the protocol the algorithm runs with (comm sets a comm.Proto) where it is
	// not the algorithm's default; nil otherwise.
	Proto fmt.Stringer
}

// CollectiveOp is the collective a kernel runs. Its value is the name comm's records,
// traces and metrics use for the call.
type CollectiveOp string

// The collectives a decode step runs.
const (
	OpAllReduce        CollectiveOp = "allreduce"         // sum over ranks, every rank gets the sum
	OpAllReduceRMSNorm CollectiveOp = "allreduce+rmsnorm" // all-reduce fused with residual add and RMSNorm
	OpAllGather        CollectiveOp = "allgather"         // every rank gets every rank's input
	OpReduceScatter    CollectiveOp = "reducescatter"     // rank r gets the sum of every rank's slice r
	// OpReduceScatterRMSNormAllGather is the sequence-parallel form of OpAllReduceRMSNorm:
	// reduce-scatter by tokens, residual add and RMSNorm on each rank's rows, all-gather of
	// the normalized and the residual rows.
	OpReduceScatterRMSNormAllGather CollectiveOp = "reducescatter+rmsnorm+allgather"
)
