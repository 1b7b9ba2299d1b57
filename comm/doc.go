// Package comm owns collective communication over a group of devices: registered peer
// buffers, per-block flag barriers, the all-reduce family (ring, one-shot, two-shot, NVLS,
// and the flag-free "Lamport" one-shot), all-gather, the size-based selector and its
// cost model, autotuning, and a flight recorder of every call.
//
// A Communicator is created once for n devices; each rank then issues its collectives
// through its Rank handle, as a kernel on a stream of its own device. Data enters as a
// device buffer on the rank's device and leaves in another (or the same) buffer once the
// stream reaches that point. Every rank must issue the same collectives in the same order
// with the same sizes; a rank that does not is named in the error the others get.
package comm
