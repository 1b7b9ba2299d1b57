//go:build !linux

package topo

import "errors"

// errNoAffinity is what CPU placement answers on a system without sched_setaffinity.
var errNoAffinity = errors.New("topo: CPU affinity needs Linux (sched_getaffinity, sched_setaffinity)")

// AllowedCPUs is Linux's only.
func AllowedCPUs() (CPUList, error) { return nil, errNoAffinity }

// PinProcess is Linux's only.
func PinProcess(CPUList) error { return errNoAffinity }
