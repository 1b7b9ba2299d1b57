// Package cudagraph owns graph capture of stream work: recording launches and event edges
// as graph nodes, instantiation, replay, the graph cache per batch-size bucket and the
// static input/output buffers that replay reads and writes.
package cudagraph
