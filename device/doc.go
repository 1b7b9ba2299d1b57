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
// # Peer-visible memory across processes
//
// Ranks that run as processes of their own reach each other's memory only through handles,
// as GPUs in separate processes do. AllocShareable backs a buffer with a sealed memfd mapped
// shared (cuMemCreate with a POSIX-fd handle type); ExportShareable returns an IPCHandle whose
// File is a new descriptor of it (cuMemExportToShareableHandle, or cudaIpcGetMemHandle);
// the descriptor travels to the peer with SCM_RIGHTS (internal/ipc); the peer's OpenPeer maps
// it (cuMemImportFromShareableHandle and cuMemMap, or cudaIpcOpenMemHandle), and Free unmaps
// it (cudaIpcCloseMemHandle). Nothing is named in a file system and the pages go when the
// last process that maps or holds them does. PeerMemory is this seam as an interface:
// InProcessMemory (an export is an entry in the node's table) and SharedMemory implement it.
// A SharedBell is the doorbell of such memory: waiters sleep in FUTEX_WAIT on a word of it
// and a ring in any process wakes them.
//
// # CPU placement
//
// A device may be given CPUs (NodeConfig.CPUs), as a GPU's host threads are bound to the
// CPUs of its NUMA node: each SM worker of its streams locks itself to an OS thread and
// restricts that thread to them, and RunOnCPUs runs host work (a rank's weight loading,
// whose first touches place the pages) on such a thread. The runtime only applies the sets
// it is given; which CPUs a rank gets is topo's (topo.Place).
//
// Data enters as host writes into buffer views (the memory is host-visible, like unified
// memory) or kernels launched on streams; it leaves the same way after Stream.Synchronize.
// Every kernel may declare its Work (class, bytes, FLOPs), which tracers and performance
// models read as a profiler reads a GPU's kernels.
// A CUDA backend implements the same concepts; nothing here knows about models or HTTP.
package device
