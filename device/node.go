package device

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Fabric is how the devices of a node are connected. It decides which peer operations the
// hardware offers: multicast needs a switch.
type Fabric uint8

const (
	// NVSwitch connects every GPU through NVLink switches that also offer multicast
	// (NVLS), as on H100/H200/B200 HGX boards.
	NVSwitch Fabric = iota + 1
	// NVLinkMesh connects GPUs with direct NVLink links and no multicast-capable switch.
	NVLinkMesh
	// PCIe connects GPUs through the PCIe hierarchy: peer access but no multicast.
	PCIe
	// InfiniBand connects hosts: each GPU's own NIC through an InfiniBand switch, with
	// GPUDirect RDMA (peer access across hosts) and no multicast. It is the fabric between
	// the hosts of a node (NodeConfig.Hosts), never the one inside a host.
	InfiniBand
)

// String names the fabric as topology reports print it.
func (f Fabric) String() string {
	switch f {
	case NVSwitch:
		return "nvswitch"
	case NVLinkMesh:
		return "nvlink"
	case PCIe:
		return "pcie"
	case InfiniBand:
		return "ib"
	}
	return fmt.Sprintf("fabric(%d)", uint8(f))
}

// ParseFabric reads a fabric name as String writes it.
func ParseFabric(s string) (Fabric, error) {
	for _, f := range []Fabric{NVSwitch, NVLinkMesh, PCIe} {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown fabric %q (want nvswitch, nvlink or pcie)", s)
}

// HasMulticast reports whether the fabric can bind multicast objects (NVLS).
func (f Fabric) HasMulticast() bool { return f == NVSwitch }

// MaxDevices is the most devices one host holds, as an 8-GPU HGX board does; a node of
// one host holds at most that many.
const MaxDevices = 8

// MaxNodeDevices is the most devices a node of several hosts holds: two 8-GPU hosts, the
// largest TP group tpslice prices across hosts.
const MaxNodeDevices = 2 * MaxDevices

// NodeConfig describes the simulated node.
type NodeConfig struct {
	// Devices is the number of devices: 1 to MaxDevices on one host, at most MaxNodeDevices
	// over several.
	Devices int
	// Hosts splits the devices evenly over this many hosts, in id order: host h holds
	// devices [h·Devices/Hosts, (h+1)·Devices/Hosts). Inside a host the devices are
	// connected by Fabric; between hosts by InfiniBand, which offers peer access but no
	// multicast. 0 means one host.
	Hosts int
	// SMs is the number of SMs per device; 0 means GOMAXPROCS.
	SMs int
	// MemoryBytes caps what each device may allocate; 0 means no cap beyond host memory.
	MemoryBytes int64
	// Fabric is the interconnect; zero means NVSwitch.
	Fabric Fabric
	// CPUs, when set, holds device d's CPUs at index d: each SM worker of its streams
	// (runtime.LockOSThread, then sched_setaffinity) and the host thread of its RunOnCPUs
	// run only there, as a GPU's host threads are bound to the CPUs of its NUMA node. An
	// empty entry leaves that device's workers to the Go scheduler. Which CPUs a rank
	// gets is topo's business (topo.Placement); the runtime only applies them.
	CPUs [][]int
}

// Node is a set of devices that can map each other's memory.
type Node struct {
	fabric  Fabric
	devices []*Device
	perHost int // devices per host; len(devices) on a node of one host

	mu       sync.Mutex
	exported map[uint64]*Buffer // IPC handle → buffer, for OpenPeer
	nextID   atomic.Uint64

	capMu sync.Mutex // guards stream captures (capture.go)

	tracer atomic.Pointer[tracerRef] // nil: tracing off (tracer.go)
}

// NewNode builds the devices of a node.
func NewNode(cfg NodeConfig) (*Node, error) {
	if err := checkHosts(cfg.Devices, cfg.Hosts); err != nil {
		return nil, err
	}
	if cfg.SMs < 0 || cfg.SMs > maxSMs {
		return nil, fmt.Errorf("device: SMs per device must be 0 (GOMAXPROCS) to %d, got %d", maxSMs, cfg.SMs)
	}
	if err := checkCPUs(cfg.Devices, cfg.CPUs); err != nil {
		return nil, err
	}
	if cfg.MemoryBytes < 0 {
		return nil, fmt.Errorf("device: memory per device must not be negative, got %d", cfg.MemoryBytes)
	}
	if cfg.SMs == 0 {
		cfg.SMs = runtime.GOMAXPROCS(0)
	}
	if cfg.Fabric == 0 {
		cfg.Fabric = NVSwitch
	}
	if cfg.Fabric.String() == fmt.Sprintf("fabric(%d)", uint8(cfg.Fabric)) {
		return nil, fmt.Errorf("device: unknown fabric %d", cfg.Fabric)
	}
	if cfg.Fabric == InfiniBand {
		return nil, fmt.Errorf("device: fabric %v (%d) connects hosts, not the devices of one host (set Hosts)", cfg.Fabric, cfg.Fabric)
	}
	n := &Node{fabric: cfg.Fabric, perHost: cfg.Devices / max(cfg.Hosts, 1), exported: map[uint64]*Buffer{}}
	for id := range cfg.Devices {
		var cpus []int
		if cfg.CPUs != nil {
			cpus = append(cpus, cfg.CPUs[id]...)
		}
		n.devices = append(n.devices, newDevice(n, id, cfg.SMs, cfg.MemoryBytes, cpus))
	}
	return n, nil
}

// checkHosts validates the split of devices over hosts.
func checkHosts(devices, hosts int) error {
	switch {
	case hosts < 0:
		return fmt.Errorf("device: a node needs at least one host, got %d", hosts)
	case hosts <= 1 && (devices < 1 || devices > MaxDevices):
		return fmt.Errorf("device: node needs 1 to %d devices, got %d", MaxDevices, devices)
	case hosts <= 1:
		return nil
	case devices < hosts || devices > MaxNodeDevices:
		return fmt.Errorf("device: a node of %d hosts needs %d to %d devices, got %d", hosts, hosts, MaxNodeDevices, devices)
	case devices%hosts != 0:
		return fmt.Errorf("device: %d devices do not split evenly over %d hosts", devices, hosts)
	case devices/hosts > MaxDevices:
		return fmt.Errorf("device: %d devices over %d hosts put %d on each; a host holds at most %d", devices, hosts, devices/hosts, MaxDevices)
	}
	return nil
}

// Fabric returns how the devices of each host are connected.
func (n *Node) Fabric() Fabric { return n.fabric }

// Hosts returns the number of hosts the devices are split over.
func (n *Node) Hosts() int { return len(n.devices) / n.perHost }

// HostOf returns the host of device id (0 for an id out of range, which Device refuses).
func (n *Node) HostOf(id int) int {
	if id < 0 || id >= len(n.devices) {
		return 0
	}
	return id / n.perHost
}

// InterHostFabric returns how the hosts are connected: InfiniBand on a node of several
// hosts, 0 on a node of one.
func (n *Node) InterHostFabric() Fabric {
	if n.Hosts() > 1 {
		return InfiniBand
	}
	return 0
}

// NumDevices returns the number of devices.
func (n *Node) NumDevices() int { return len(n.devices) }

// Device returns device id, or an error naming the id when it is out of range.
func (n *Node) Device(id int) (*Device, error) {
	if id < 0 || id >= len(n.devices) {
		return nil, fmt.Errorf("device: no device %d on a node of %d", id, len(n.devices))
	}
	return n.devices[id], nil
}

// Devices returns all devices in id order.
func (n *Node) Devices() []*Device { return append([]*Device(nil), n.devices...) }

// Close stops every stream of every device; buffers become unusable.
func (n *Node) Close() error {
	var errs []error
	for _, d := range n.devices {
		errs = append(errs, d.close())
	}
	return errors.Join(errs...)
}
