package topo

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
)

// AllowedCPUs returns the CPUs the calling thread may run on (sched_getaffinity): at
// start-up, the process's, as taskset, numactl or a cpuset cgroup left it.
func AllowedCPUs() (CPUList, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("topo: sched_getaffinity: %w", err)
	}
	var out CPUList
	for c := range device.MaxCPUs {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// PinProcess restricts every thread of the process to cpus: what a rank's worker process
// calls at start-up with its Placement's CPUs, as numactl or taskset would before exec. A
// thread inherits its creator's CPUs, so pinning every thread listed until a pass finds
// none it has not pinned leaves none behind. Go's runtime follows the new set with
// GOMAXPROCS unless the program set it.
func PinProcess(cpus CPUList) error {
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	pinned := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("topo: pin the process to CPUs %v: %w", cpus, err)
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[tid] {
				continue
			}
			// A thread that exited since the listing is no longer there to pin.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("topo: pin thread %d to CPUs %v: %w", tid, cpus, err)
			}
			pinned[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// cpuSet converts a non-empty list to the kernel's set.
func cpuSet(cpus CPUList) (unix.CPUSet, error) {
	var set unix.CPUSet
	if len(cpus) == 0 {
		return set, fmt.Errorf("topo: an empty CPU list pins nothing")
	}
	for _, c := range cpus {
		set.Set(c)
	}
	return set, nil
}
