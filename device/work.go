package device

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
	// Collective kernels: Op names the collective ("allreduce", "allgather",
	// "allreduce+rmsnorm"), Algo the algorithm it runs, Message the bytes each rank
	// contributes in this kernel.
	Op, Algo string
	Message  int64
}
