package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SysfsRoot is where the kernel lists the machine's CPUs (cpu/) and NUMA nodes (node/).
const SysfsRoot = "/sys/devices/system"

// NUMANode is one NUMA node with the CPUs of it the process may use.
type NUMANode struct {
	ID int `json:"id"`
	// CPUs are the node's CPUs that are online and in the process's allowed set.
	CPUs CPUList `json:"cpus"`
	// Cores splits CPUs by physical core (SMT siblings together), in order of their
	// first CPU; one CPU a core where the kernel does not list siblings.
	Cores []CPUList `json:"-"`
}

// Machine is the CPUs the process may run on, by NUMA node.
type Machine struct {
	// Nodes are the NUMA nodes with at least one usable CPU, in id order; a machine without
	// a node directory is one node 0 of every usable CPU.
	Nodes []NUMANode `json:"nodes"`
	// Online is the kernel's online CPUs, Allowed the process's CPU affinity.
	Online  CPUList `json:"online"`
	Allowed CPUList `json:"allowed"`
	// Skipped says which nodes hold no usable CPU (memory-only nodes such as CXL or HBM in
	// flat mode, or nodes outside the allowed set), one line each.
	Skipped []string `json:"skipped,omitempty"`
}

// DetectMachine reads this machine's NUMA nodes under SysfsRoot and the process's allowed
// CPUs (sched_getaffinity).
func DetectMachine() (Machine, error) {
	allowed, err := AllowedCPUs()
	if err != nil {
		return Machine{}, err
	}
	return ReadMachine(SysfsRoot, allowed)
}

// ReadMachine reads the NUMA nodes and online CPUs under root (a sysfs tree laid out as
// /sys/devices/system: node/node*/cpulist, cpu/online, cpu/cpu*/topology/
// thread_siblings_list) and keeps the CPUs in allowed (nil: every online CPU). A missing
// cpu/online means every allowed CPU is online; a missing node directory, one node. An
// error names the file and quotes what it could not read.
func ReadMachine(root string, allowed CPUList) (Machine, error) {
	online, err := readCPUList(filepath.Join(root, "cpu", "online"))
	switch {
	case errors.Is(err, fs.ErrNotExist) && allowed != nil:
		online = allowed
	case err != nil:
		return Machine{}, err
	}
	if allowed == nil {
		allowed = online
	}
	m := Machine{Online: online, Allowed: allowed}
	usable := online.Intersect(allowed)
	if len(usable) == 0 {
		return Machine{}, fmt.Errorf("topo: no CPU is both online (%v) and allowed (%v)", online, allowed)
	}
	dirs, err := filepath.Glob(filepath.Join(root, "node", "node[0-9]*"))
	if err != nil {
		return Machine{}, fmt.Errorf("topo: %w", err)
	}
	nodes := map[int]CPUList{}
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue // not a node directory (node*/ holds only nodeN)
		}
		cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
		if err != nil {
			return Machine{}, err
		}
		nodes[id] = cpus
	}
	if len(nodes) == 0 { // no node directory: one node of every usable CPU
		nodes[0] = usable
	}
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		cpus := nodes[id].Intersect(usable)
		if len(cpus) == 0 {
			m.Skipped = append(m.Skipped, fmt.Sprintf("node %d: no CPU online and allowed (its CPUs: %q)", id, nodes[id].String()))
			continue
		}
		cores, err := readCores(root, cpus)
		if err != nil {
			return Machine{}, err
		}
		m.Nodes = append(m.Nodes, NUMANode{ID: id, CPUs: cpus, Cores: cores})
	}
	if len(m.Nodes) == 0 {
		return Machine{}, fmt.Errorf("topo: no NUMA node under %s holds a usable CPU (online %v, allowed %v)", root, online, allowed)
	}
	return m, nil
}

// readCores groups cpus by physical core from each CPU's thread_siblings_list; a CPU
// whose file is missing is a core of its own.
func readCores(root string, cpus CPUList) ([]CPUList, error) {
	var cores []CPUList
	seen := map[int]bool{}
	for _, c := range cpus {
		if seen[c] {
			continue
		}
		siblings, err := readCPUList(filepath.Join(root, "cpu", fmt.Sprintf("cpu%d", c), "topology", "thread_siblings_list"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			siblings = CPUList{c}
		case err != nil:
			return nil, err
		}
		core := siblings.Intersect(cpus)
		if !slices.Contains(core, c) {
			core = CPUList{c} // a sibling list that omits the CPU itself is not believed
		}
		for _, s := range core {
			seen[s] = true
		}
		cores = append(cores, core)
	}
	return cores, nil
}

// readCPUList reads a file holding one CPU list; an error names the file and quotes it.
func readCPUList(path string) (CPUList, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("topo: %w", err)
	}
	l, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("topo: %s: %w", path, err)
	}
	return l, nil
}
