// Package device is tpslice's accelerator runtime: a multi-GPU node that runs on the CPU.
//
// A Node holds Devices. Each Device owns memory (typed Buffers in f32, bf16 or f16), a fixed
// number of SMs (slots that kernel blocks occupy while they run), Streams that execute work
// in order, and Events that order work across streams. Buffers registered on one device can
// be opened by its peers (what CUDA IPC gives), and a Multicast object binds one buffer per
// device so that one load returns the sum over all devices and one store writes to all of
// them (what NVSwitch multimem.ld_reduce / multimem.st give); it counts the elements it
// moves, which tells a collective that went through the switch from one that gives the
// same bits without it.
//
// A node may group its devices into hosts (NodeConfig.Hosts): inside a host they share the
// node's fabric, between hosts an InfiniBand fabric that offers peer access (GPUDirect
// RDMA) but no multicast, so a multicast object binds the devices of one host only. The
// runtime knows this topology (Node.HostOf) and does not slow cross-host accesses down;
// what they cost on real hardware is the performance model's business.
//
// Data enters as host writes into buffer views (the memory is host-visible, like unified
// memory) or kernels launched on streams; it leaves the same way after Stream.Synchronize.
// Every kernel may declare its Work (class, bytes, FLOPs), which tracers and performance
// models read as a profiler reads a GPU's kernels.
// A CUDA backend implements the same concepts; nothing here knows about models or HTTP.
package device
