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

// MaxDevices is the largest node the runtime builds, as on an 8-GPU HGX board.
const MaxDevices = 8

// NodeConfig describes the simulated node.
type NodeConfig struct {
	// Devices is the number of devices, 1 to MaxDevices.
	Devices int
	// SMs is the number of SMs per device; 0 means GOMAXPROCS.
	SMs int
	// MemoryBytes caps what each device may allocate; 0 means no cap beyond host memory.
	MemoryBytes int64
	// Fabric is the interconnect; zero means NVSwitch.
	Fabric Fabric
}

// Node is a set of devices that can map each other's memory.
type Node struct {
	fabric  Fabric
	devices []*Device

	mu       sync.Mutex
	exported map[uint64]*Buffer // IPC handle → buffer, for OpenPeer
	nextID   atomic.Uint64

	capMu sync.Mutex // guards stream captures (capture.go)

	tracer atomic.Pointer[tracerRef] // nil: tracing off (tracer.go)
}

// NewNode builds the devices of a node.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Devices < 1 || cfg.Devices > MaxDevices {
		return nil, fmt.Errorf("device: node needs 1 to %d devices, got %d", MaxDevices, cfg.Devices)
	}
	if cfg.SMs < 0 {
		return nil, fmt.Errorf("device: SMs per device must be positive, got %d", cfg.SMs)
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
	n := &Node{fabric: cfg.Fabric, exported: map[uint64]*Buffer{}}
	for id := range cfg.Devices {
		n.devices = append(n.devices, newDevice(n, id, cfg.SMs, cfg.MemoryBytes))
	}
	return n, nil
}

// Fabric returns how the node's devices are connected.
func (n *Node) Fabric() Fabric { return n.fabric }

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
