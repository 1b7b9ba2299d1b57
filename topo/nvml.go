//go:build cgo

package topo

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// fromDriver reads the topology through the system's NVML library.
func fromDriver() (Topology, error) { return FromNVML(nvml.New()) }

// FromNVML reads the node's topology through lib (nvml.New(), or a mock in tests). When
// Init fails it returns at once: go-nvml calls through the library's symbols, and any call
// into a library that did not load kills the process. After a successful Init it calls
// Shutdown. A call a GPU does not support (ERROR_NOT_SUPPORTED) means "not present"; any
// other failure is an error naming the GPU and the call.
func FromNVML(lib nvml.Interface) (Topology, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return Topology{}, initError{ret}
	}
	// The topology is read by then; a failed shutdown changes nothing about it.
	defer lib.Shutdown()

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Topology{}, fmt.Errorf("NVML: DeviceGetCount: %w", ret)
	}
	if n < 1 {
		return Topology{}, errors.New("NVML: the driver reports no GPUs")
	}
	// Newer calls are looked up first: calling a symbol an older driver lacks kills the
	// process just as calling an unloaded library does.
	ext := lib.Extensions()
	has := func(sym string) bool { return ext.LookupSymbol(sym) == nil }
	r := reader{remoteType: has("nvmlDeviceGetNvLinkRemoteDeviceType"), fabricInfo: has("nvmlDeviceGetGpuFabricInfo")}
	gpus := make([]nvmlGPU, n)
	for i := range n {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Topology{}, callError(i, "DeviceGetHandleByIndex", ret)
		}
		g, err := r.gpu(i, d)
		if err != nil {
			return Topology{}, err
		}
		gpus[i] = g
	}
	return r.topology(gpus)
}

// initError is a failed nvml.Init. Its text comes from a table here, not from NVML:
// nvml.Return's Error may call nvmlErrorString, and no NVML call may follow a failed Init.
type initError struct{ ret nvml.Return }

// Error says which Init failure it was, from a local table.
func (e initError) Error() string {
	switch e.ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML: library not found (no NVIDIA driver)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVML: the NVIDIA driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "NVML: no permission to talk to the NVIDIA driver"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVML: the NVML library and the kernel driver versions differ"
	}
	return fmt.Sprintf("NVML: Init failed with return code %d", int32(e.ret))
}

// Unwrap lets errors.Is(err, nvml.ERROR_LIBRARY_NOT_FOUND) hold.
func (e initError) Unwrap() error { return e.ret }

func callError(gpu int, call string, ret nvml.Return) error {
	return fmt.Errorf("NVML: GPU %d: %s: %w", gpu, call, ret)
}

// reader holds which of the newer NVML calls the loaded library offers.
type reader struct{ remoteType, fabricInfo bool }

// pciAddr identifies a PCIe device, for matching an NVLink's far end to a GPU.
type pciAddr struct{ domain, bus, device uint32 }

func addrOf(p nvml.PciInfo) pciAddr { return pciAddr{p.Domain, p.Bus, p.Device} }

// nvmlGPU is one GPU as read, before its pairs are.
type nvmlGPU struct {
	GPU
	dev         nvml.Device
	pci         pciAddr
	switchLinks int       // NVLinks up to an NVSwitch
	peers       []pciAddr // far ends of NVLinks up to anything else, one per link
	onFabric    bool      // registered with the NVLink fabric manager
}

// gpu reads GPU i's name, memory, PCIe address, NVLinks and fabric registration.
func (r reader) gpu(i int, d nvml.Device) (nvmlGPU, error) {
	g := nvmlGPU{GPU: GPU{Index: i}, dev: d}
	var ret nvml.Return
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return g, callError(i, "GetName", ret)
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return g, callError(i, "GetMemoryInfo", ret)
	}
	g.MemoryBytes = mem.Total
	pci, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return g, callError(i, "GetPciInfo", ret)
	}
	g.pci = addrOf(pci)
	if err := r.links(&g); err != nil {
		return g, err
	}
	if !r.fabricInfo {
		return g, nil
	}
	// The unversioned call: NVML 13 deprecates it for the versioned one, but go-nvml's
	// handler for that wraps an unexported device type that no mock can stand in for.
	info, ret := d.GetGpuFabricInfo()
	switch ret {
	case nvml.SUCCESS:
		g.onFabric = info.State == nvml.GPU_FABRIC_STATE_COMPLETED && info.Status == uint32(nvml.SUCCESS)
	case nvml.ERROR_NOT_SUPPORTED: // before Hopper, or no NVSwitch: no fabric
	default:
		return g, callError(i, "GetGpuFabricInfo", ret)
	}
	return g, nil
}

// links counts g's NVLinks that are up and where each leads.
func (r reader) links(g *nvmlGPU) error {
	for l := range nvml.NVLINK_MAX_LINKS {
		state, ret := g.dev.GetNvLinkState(l)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT: // no NVLink, or no link l
			continue
		default:
			return callError(g.Index, fmt.Sprintf("GetNvLinkState(link %d)", l), ret)
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		g.NVLinks++
		if r.remoteType {
			typ, ret := g.dev.GetNvLinkRemoteDeviceType(l)
			switch {
			case ret == nvml.SUCCESS && typ == nvml.NVLINK_DEVICE_TYPE_SWITCH:
				g.switchLinks++
				continue
			case ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED:
				return callError(g.Index, fmt.Sprintf("GetNvLinkRemoteDeviceType(link %d)", l), ret)
			}
		}
		pci, ret := g.dev.GetNvLinkRemotePciInfo(l)
		switch ret {
		case nvml.SUCCESS:
			g.peers = append(g.peers, addrOf(pci))
		case nvml.ERROR_NOT_SUPPORTED: // up, but NVML does not say to what
		default:
			return callError(g.Index, fmt.Sprintf("GetNvLinkRemotePciInfo(link %d)", l), ret)
		}
	}
	return nil
}

// topology reads every pair's P2P status and PCIe path and assembles the Topology.
func (r reader) topology(gpus []nvmlGPU) (Topology, error) {
	t := Topology{Source: "nvml", NVSwitch: true, NVLS: true, Links: make([][]Link, len(gpus))}
	for _, g := range gpus {
		t.GPUs = append(t.GPUs, g.GPU)
		t.NVSwitch = t.NVSwitch && g.switchLinks > 0
		t.NVLS = t.NVLS && g.onFabric
	}
	t.NVLS = t.NVLS && t.NVSwitch
	for i, a := range gpus {
		t.Links[i] = make([]Link, len(gpus))
		for j, b := range gpus {
			if i == j {
				continue
			}
			l, err := pair(a, b)
			if err != nil {
				return Topology{}, err
			}
			t.Links[i][j] = l
		}
	}
	return t, nil
}

// pair reads how a reaches b: its direct NVLinks to b plus, when both reach the switch,
// the links the narrower of them has to it (nvidia-smi shows NV18 between any two HGX H100
// GPUs); P2P read status; and the PCIe path.
func pair(a, b nvmlGPU) (Link, error) {
	var l Link
	for _, p := range a.peers {
		if p == b.pci {
			l.NVLinks++
		}
	}
	if a.switchLinks > 0 && b.switchLinks > 0 {
		l.NVLinks += min(a.switchLinks, b.switchLinks)
	}
	p2p, ret := a.dev.GetP2PStatus(b.dev, nvml.P2P_CAPS_INDEX_READ)
	switch ret {
	case nvml.SUCCESS:
		l.P2P = p2pStatus(p2p)
	case nvml.ERROR_NOT_SUPPORTED:
		l.P2P = "not supported"
	default:
		return l, callError(a.Index, fmt.Sprintf("GetP2PStatus(GPU %d)", b.Index), ret)
	}
	level, ret := a.dev.GetTopologyCommonAncestor(b.dev)
	switch ret {
	case nvml.SUCCESS:
		l.PCIe = pathKind(level)
	case nvml.ERROR_NOT_SUPPORTED: // NVML does not tell; the matrix shows N/A
	default:
		return l, callError(a.Index, fmt.Sprintf("GetTopologyCommonAncestor(GPU %d)", b.Index), ret)
	}
	return l, nil
}

// pathKind is nvidia-smi's label for a common-ancestor level. Two GPUs on one board
// (TOPOLOGY_INTERNAL) are at most one bridge apart, so PIX.
func pathKind(level nvml.GpuTopologyLevel) PathKind {
	switch level {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE:
		return PIX
	case nvml.TOPOLOGY_MULTIPLE:
		return PXB
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return PHB
	case nvml.TOPOLOGY_NODE:
		return NODE
	}
	return SYS
}

// p2pStatus words an NVML P2P status as nvidia-smi topo -p2p's legend does.
func p2pStatus(s nvml.GpuP2PStatus) P2PStatus {
	switch s {
	case nvml.P2P_STATUS_OK:
		return P2POK
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED:
		return "chipset not supported"
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return "GPU not supported"
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return "IOH topology not supported"
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return "disabled by regkey"
	case nvml.P2P_STATUS_NOT_SUPPORTED:
		return "not supported"
	}
	return "unknown"
}
