// Package tp owns the tensor-parallel group: its world size (its ranks split over hosts
// where GroupConfig.Hosts says so), the node, communicator and per-rank streams the ranks
// run on (every rank in this process, or one rank of a group of worker processes:
// JoinGroup), the rank workers that issue each local rank's work, and the
// sharding plan — which query heads, KV heads, FFN columns and vocabulary rows each rank
// owns (KV heads are replicated when a model has fewer of them than ranks; the FFN is
// dealt out in whole blocks of its weights' quantization type where it has at least one a
// rank, unevenly by one block where the ranks do not divide them, and otherwise, like the
// vocabulary, padded to a multiple of the world size). Impossible plans (heads the ranks
// do not divide) are refused with the reason.
//
// Data enters as a model shape and a world size and leaves as per-rank index ranges that
// the weight loaders and layers use; tp knows nothing of file formats or HTTP.
package tp
