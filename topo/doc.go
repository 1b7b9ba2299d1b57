// Package topo owns the GPU topology of the node tpslice runs on: which GPUs there are, how
// each pair is connected (bonded NVLinks, P2P status, the PCIe path between them), whether
// an NVSwitch fabric offers multicast (NVLS), and what that means for the rest of tpslice —
// the device.Fabric the all-reduce selector works with and the hw.Profile the performance
// model uses.
//
// A Topology comes from NVML (FromNVML, only in cgo builds: go-nvml needs it) or from a
// name (Simulated). Detect tries NVML and falls back to a simulated topology, saying why in
// the Topology's Source; on a machine without an NVIDIA driver NVML's Init fails and no
// other NVML call is made, because go-nvml would call through an unloaded library.
//
// It also owns the CPU side of the node, as nvidia-smi topo -m's CPU and NUMA affinity
// columns do: the NUMA nodes and their CPUs (ReadMachine, from sysfs and the process's
// allowed set) and where each rank runs (Place: the automatic plan, a rank per node in
// contiguous blocks, or --cpu-affinity's lists). Which CPUs and memory serve a rank is the
// same question as which PCIe root and socket a GPU hangs off (the NODE and SYS paths
// above), so it lives here rather than in a package of its own; applying a placement is
// the runtime's (device.NodeConfig.CPUs pins each device's SM workers in the process) or,
// for a rank that is a process of its own, PinProcess at the worker's start-up.
//
// Report is what tpslice topo --json prints: a topology, the fabric and profile derived
// from it, the machine's NUMA nodes and the ranks' placement.
//
// It imports device and hw (and go-nvml); the command line and the engine import it, never
// the reverse.
package topo
