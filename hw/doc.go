// Package hw describes real GPU nodes for tpslice's performance model: SM count, HBM
// bandwidth and capacity, per-GPU link bandwidth, the per-step cost α of a collective, the
// fabric (NVSwitch with or without multicast, NVLink, PCIe), kernel launch costs, and the
// InfiniBand link between hosts where a TP group spans several nodes (InterHost). It also
// describes two-socket CPU servers (TwoSocket: each socket's DRAM bandwidth and the link
// between the sockets), for the model of what a rank per NUMA node buys (perf.PriceNUMA).
//
// It is a leaf: it imports only the standard library and device (for device.Fabric).
// Data enters as a profile name (Lookup) and leaves as a Profile value; nothing here is
// mutable, and every constant names its source or says why it is an estimate.
package hw
