package device

import (
	"errors"
	"fmt"
)

// MaxCPUs bounds CPU ids: a CPU set of sched_setaffinity holds CPUs 0 to MaxCPUs-1 (glibc's
// CPU_SETSIZE, golang.org/x/sys/unix's CPUSet).
const MaxCPUs = 1024

// checkCPUs validates NodeConfig.CPUs for a node of devices devices.
func checkCPUs(devices int, cpus [][]int) error {
	if cpus == nil {
		return nil
	}
	if len(cpus) != devices {
		return fmt.Errorf("device: %d CPU sets for %d devices; give one a device, or none", len(cpus), devices)
	}
	for id, set := range cpus {
		for _, c := range set {
			if c < 0 || c >= MaxCPUs {
				return fmt.Errorf("device: device %d's CPUs %v: CPU %d is outside 0-%d", id, set, c, MaxCPUs-1)
			}
		}
	}
	return nil
}

// CPUs returns the CPUs the device's SM workers are pinned to, nil when they are not.
func (d *Device) CPUs() []int { return append([]int(nil), d.cpus...) }

// RunOnCPUs runs fn on a goroutine locked to an OS thread pinned to the device's CPUs, and
// returns its error: how a rank's loader first touches the rank's weights, so that Linux,
// which places a page on the NUMA node of the CPU that first writes it, puts them in the
// memory of the rank's node. The thread ends with the goroutine (it never unlocks), so no
// pinned thread returns to Go's pool. On a device without CPUs fn runs on the caller's
// goroutine.
func (d *Device) RunOnCPUs(fn func() error) error {
	if len(d.cpus) == 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		if err := pinThread(d.cpus); err != nil {
			done <- fmt.Errorf("%v: pin the host thread to CPUs %v: %w", d, d.cpus, err)
			return
		}
		done <- protect(fn)
	}()
	return <-done
}

// pinWorker pins the calling SM worker (a stream's goroutine or one of its helpers) to the
// device's CPUs, locking it to its thread for the rest of its life; nothing on a device
// without CPUs, whose workers the Go scheduler moves freely.
func (s *Stream) pinWorker() error {
	if len(s.dev.cpus) == 0 {
		return nil
	}
	if err := pinThread(s.dev.cpus); err != nil {
		return fmt.Errorf("%v: pin an SM worker to CPUs %v: %w", s, s.dev.cpus, err)
	}
	return nil
}

// awaitPinned collects the pinning results of a new stream's workers.
func awaitPinned(workers int, pinned <-chan error) error {
	errs := make([]error, workers)
	for i := range workers {
		errs[i] = <-pinned
	}
	return errors.Join(errs...)
}
