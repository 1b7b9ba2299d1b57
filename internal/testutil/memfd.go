package testutil

import (
	"fmt"
	"os"
	"strings"
)

// MemfdLeft returns the lines of /proc/self/maps and the descriptors of this process that
// still reach a memory file whose /proc name contains name ("memfd:tpslice-device"), or an
// error if they cannot be read: what a test checks is gone once shared memory was freed.
func MemfdLeft(name string) ([]string, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	var left []string
	for line := range strings.Lines(string(maps)) {
		if strings.Contains(line, name) {
			left = append(left, "mapping "+strings.TrimSpace(line))
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.Contains(target, name) {
			left = append(left, "fd "+fd.Name()+" -> "+target)
		}
	}
	return left, nil
}

// DeviceMemfd is the /proc name of the device memory that ranks share between processes.
const DeviceMemfd = "memfd:tpslice-device"

// NothingLeft returns an error naming what rank processes left behind in this process: a
// child process, or a mapping or descriptor of shared device memory.
func NothingLeft() error {
	kids, err := ChildPids()
	if err != nil {
		return err
	}
	if len(kids) > 0 {
		return fmt.Errorf("child processes left: %v", kids)
	}
	left, err := MemfdLeft(DeviceMemfd)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("shared device memory left mapped or open: %v", left)
	}
	return nil
}
