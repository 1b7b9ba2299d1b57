//go:build !cgo

package topo

import "errors"

// fromDriver has no NVML to ask: go-nvml loads the library through cgo.
func fromDriver() (Topology, error) {
	return Topology{}, errors.New("built without cgo: NVML unavailable")
}
