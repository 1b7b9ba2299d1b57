// Package cudagraph owns graphs of stream work, as CUDA Graphs do: Capture records what a
// function enqueues on a stream (and on the streams it forks through events) into a
// device.Graph; Instantiate turns the graph into an Exec whose Launch replays it with one
// stream operation per segment instead of one host round trip per kernel; Cache keeps one
// Exec per batch-size bucket.
//
// The CUDA discipline holds: a graph bakes in the buffers its kernels use, so inputs and
// outputs go through static buffers the caller fills before and reads after a replay;
// allocating or synchronizing while capturing is an error (device.ErrCapture).
package cudagraph
