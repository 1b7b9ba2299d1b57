package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/tpslice/tpslice/device"
)

// planTPs reads --tp for a node of hosts hosts of device.MaxDevices GPUs each: degrees up
// to the node's GPUs (at most device.MaxNodeDevices). Without an explicit --tp, a node of
// several hosts adds its largest degree to the default list.
func planTPs(fs *flag.FlagSet, spec string, hosts int) ([]int, error) {
	if hosts < 1 {
		return nil, fmt.Errorf("--hosts: want at least 1, got %d", hosts)
	}
	top := min(hosts*device.MaxDevices, device.MaxNodeDevices)
	if hosts > 1 && !flagSet(fs, "tp") {
		spec += "," + strconv.Itoa(top)
	}
	return parseIntList("tp", spec, 1, top)
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
