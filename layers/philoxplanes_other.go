//go:build !amd64 || noasm

package layers

// Without the amd64 assembly, the Philox planes are the Go of philoxplanes.go.

// fillPhiloxPlanes is philoxPlanesGo (keys, philoxRoundKeys(seed), is unused here).
func fillPhiloxPlanes(p *philoxPlanes, keys *[20]uint32, seed, pos uint64, b0 uint32, n int) {
	philoxPlanesGo(p, seed, pos, b0, n)
}

// philoxPlaneKernels: none without the assembly.
func philoxPlaneKernels() map[string]func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int) {
	return nil
}
