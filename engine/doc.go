// Package engine owns the decode loop: continuous-batching scheduler, KV block manager,
// sampling, graph capture per bucket and overlap orchestration; it is the public Go API.
package engine
