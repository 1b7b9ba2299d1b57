// Package comm owns collective communication over a group of devices: registered peer
// buffers, per-block flag barriers, the all-reduce family (ring, one-shot, two-shot, NVLS,
// the flag-free "Lamport" one-shot, NCCL's double binary tree, and the seed's rank-0
// reduce-and-broadcast, a baseline that runs only when named), reduce-scatter and
// all-gather (direct — OneShot: every rank reads its slice from every peer — or the ring;
// Auto follows the fabric, ScatterGatherRule), the size-based selector of the all-reduce
// (its table measured here by autotuning, or priced by package perf; Offered says which
// algorithms a fabric runs), and a flight recorder of every call. Selection tables are
// one generic type, BucketTable (comm's Table of Choices by message bytes, fused's of
// variants by tokens), with one lookup, one file format and one cache policy
// (LoadOrTune).
//
// Each all-reduce algorithm is described once, as a row of a registry (registry.go): its
// name and one-line Doc, where a model may offer it, what it needs of the communicator (a
// multicast object, ranks on several hosts), which protocols and wires it runs, its
// kernels and its α-β shape (Algo.Cost). Parsing, Algos, AlgoNames, Available, TakesProto,
// Wire.Supports, Offered, AllReduce's dispatch and package perf's model read the row.
//
// Every sum has a fixed order, so repeated calls give the same bits: one-shot, two-shot
// and the direct reduce-scatter add the ranks' values in rank order, the ring
// reduce-scatter around the ring from the slice's next rank (ReduceScatterWith), the tree
// up its trees; 16-bit values are summed in f32 and rounded once.
//
// On a node of several hosts (device.NodeConfig.Hosts) the ranks are grouped by host, and
// the two-level all-reduce (TwoLevel) runs: reduce-scatter inside each host, an exchange of
// each 1/L slice among the ranks of the same local index across hosts, all-gather inside
// each host. There the selector consults only a table made for that many hosts
// (Table.Hosts) and otherwise runs TwoLevel; Offered lists what a model may price
// there; NVLS is gone, since no multicast crosses hosts.
//
// The ring and the tree run under one of NCCL's protocols (Proto), orthogonal to the
// algorithm: each schedule is written once (ring.go, tree.go) over the protocol primitives
// (prims.go: a step receives from its sources, reduces with the input, writes the output,
// sends on), which Simple (prims_simple.go: bulk data left in the staging buffer for the
// peers to read, then a barrier or a flag), LL (8-byte words of 4 data bytes and a 4-byte
// flag, proto_ll.go) and LL128 (128-byte lines of 120 data bytes and an 8-byte flag,
// proto_ll128.go) implement, the last two by pushing into the receiver's protocol buffer
// (prims_flagged.go, protobuf.go). Every protocol adds the same values in the same order,
// so it gives the same bits. Config.Proto or $TPSLICE_PROTO forces one; otherwise a table
// row (its Choice.Proto) picks it per size, else it is Simple.
//
// A Communicator is created once for n devices; each rank then issues its collectives
// through its Rank handle, as a kernel on a stream of its own device. Data enters as a
// device buffer on the rank's device and leaves in another (or the same) buffer once the
// stream reaches that point. Every rank must issue the same collectives in the same order
// with the same sizes; a rank that does not is named in the error the others get.
//
// One-shot and two-shot can move their inputs in a low-precision wire format
// (Config.Wire, off by default, where the exact path is bitwise what it always was): bf16
// (f32 rounded to nearest even) or fp8 (OCP e4m3 with one f32 scale per 32 values, the
// block's amax/448). Readers decode and sum in f32 in rank order, so every rank still gets
// the same bits; two-shot encodes its reduced slice again for the gather, so its result is
// the wire-rounded sum. Each input errs by at most 2^-8 of itself (bf16) or 2^-4 of its
// block's largest magnitude (fp8). Other algorithms refuse a wire rather than ignore it,
// and Auto then picks between one-shot and two-shot by the bytes on the wire
// (MessageBytes, which the kernels declare for the cost model too).
//
// Failures end within Config.Timeout, never in a hang: a peer that does not arrive, a
// mismatched or skipped call, a corrupted barrier flag, a panicking kernel. The error names
// the rank, the sequence number and the call, and lists the last call of every rank from
// the flight recorder (Communicator.Flight dumps more on demand). The communicator then
// stays failed (Err); a process closes it and builds a new one.
//
// Ranks see each other only through buffers opened from handles, so a communicator's ranks
// are goroutines of one process (New) or processes of their own (Join: this process's
// rank, the peers' handles all-gathered by a Bootstrap, as vLLM's create_shared_buffer
// does). Every word a peer reads lives in registered memory: besides data and flags, each
// rank's control buffer (control.go) holds its doorbell (a device.SharedBell between
// processes), its failure word, the call descriptors it published for mismatch checks
// (callslot.go: a peer compares one tag word, the sequence number and a digest) and its
// last collective, which names a dead rank's last call when the driver marks it
// (MarkExited). A driver that holds no rank maps only the control buffers (Watcher;
// DeathWatch marks a dead worker's and names its last call, and shows every rank's last
// collective as its flight recorder). Config.Memory allocates, exports and opens the
// buffers.
//
// Faults can be injected to rehearse this, as NCCL's and PyTorch's knobs allow:
// TPSLICE_FAULT=rank:R,call:N,kind:K (read by FaultFromEnv, passed as Config.Fault) makes
// the N-th collective call of rank R, counting from 1 at start-up across rebuilt
// communicators, stall, panic, skip, corrupt a peer flag or end its process, once.
package comm
