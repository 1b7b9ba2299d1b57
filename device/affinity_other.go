//go:build !linux

package device

import "errors"

// pinThread is Linux's only: elsewhere a device with CPUs fails to start its streams.
func pinThread([]int) error {
	return errors.New("CPU affinity needs Linux (sched_setaffinity)")
}
