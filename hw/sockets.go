package hw

import (
	"fmt"
	"strings"
)

// TwoSocket is a two-socket CPU server as the NUMA placement model (perf.PriceNUMA) sees
// it: each socket's DRAM bandwidth and the links between the sockets. Both are datasheet
// peaks; a sustained fraction of them (STREAM reaches most of the DRAM's) scales every
// placement alike, so the ratios between placements stand.
type TwoSocket struct {
	// Name is what LookupTwoSocket accepts ("2x-xeon-8480").
	Name string
	// CPU names the part in words, for reports.
	CPU string
	// MemBytesPerSec is one socket's DRAM peak: channels × transfers a second × 8 bytes.
	MemBytesPerSec float64
	// LinkBytesPerSec is what the links between the sockets carry in one direction, all
	// links together (UPI, or AMD's xGMI), raw, before protocol overhead.
	LinkBytesPerSec float64
	// Source names the figures.
	Source string
}

// twoSockets lists the servers, newest Intel first.
func twoSockets() []TwoSocket {
	return []TwoSocket{
		{
			Name: "2x-xeon-8480", CPU: "2× Intel Xeon Platinum 8480+ (Sapphire Rapids, 56 cores)",
			// 8 channels of DDR5-4800 a socket; 4 UPI 2.0 links at 16 GT/s, each carrying 2
			// bytes a transfer a direction (Intel's 20.8 GB/s at 10.4 GT/s, scaled).
			MemBytesPerSec: 8 * 4800e6 * 8, LinkBytesPerSec: 4 * 16e9 * 2,
			Source: "Intel ARK, Xeon Platinum 8480+: 8 DDR5-4800 channels, 4 UPI links at 16 GT/s",
		},
		{
			Name: "2x-epyc-9654", CPU: "2× AMD EPYC 9654 (Genoa, 96 cores)",
			// 12 channels of DDR5-4800 a socket; 4 xGMI links of 16 lanes at 32 Gb/s between
			// the sockets (some boards wire 3 and give the lanes to PCIe).
			MemBytesPerSec: 12 * 4800e6 * 8, LinkBytesPerSec: 4 * 16 * 32e9 / 8,
			Source: "AMD EPYC 9004 product brief: 12 DDR5-4800 channels, up to 4 xGMI links at 32 Gb/s",
		},
	}
}

// TwoSockets returns the two-socket servers the NUMA model knows.
func TwoSockets() []TwoSocket { return twoSockets() }

// LookupTwoSocket returns the two-socket server of that name, or an error listing them.
func LookupTwoSocket(name string) (TwoSocket, error) {
	var names []string
	for _, s := range twoSockets() {
		if s.Name == strings.ToLower(strings.TrimSpace(name)) {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return TwoSocket{}, fmt.Errorf("hw: unknown two-socket server %q (have %s)", name, strings.Join(names, ", "))
}
