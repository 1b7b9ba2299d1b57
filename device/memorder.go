package device

// Stores to memory that peers read (flags, descriptors, a rank's last collective) need
// release order only: whoever sees the stored word sees every store before it. Go's
// sync/atomic stores are sequentially consistent, which on amd64 is an XCHG: a locked
// instruction that drains the store buffer and, on a line another core holds, stalls until
// the line arrives. A small call across processes makes some five such stores per rank, a
// tenth of its CPU, and stalled a full crossing on each flag. StoreRelease32 and
// StoreRelease64 are the plain stores amd64 orders so already (x86-TSO: stores are seen in
// program order, and a store is not passed by an earlier load); the CUDA twin is
// st.release.sys. Fence is the full barrier (a locked add on amd64), __threadfence_system's
// twin, for the one place that needs a later load ordered after the stores: a writer that
// stores a flag and then looks whether its reader sleeps (a doorbell's Ring), as the reader
// counts itself asleep before it looks at the flag.
//
// Under the race detector, and off amd64, they are sync/atomic's stores (memorder_atomic.go),
// which the detector sees, with the same meaning.
