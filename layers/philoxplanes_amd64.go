//go:build amd64 && !noasm

package layers

import "github.com/tpslice/tpslice/vec"

// philoxPlanesAVX512 (philoxplanes_amd64.s) computes blocks b0 .. b0+n−1 of draw pos into
// p, n a multiple of 8 and at most philoxPlaneBlocks, 8 blocks a pass (one 64-bit lane
// each: VPMULUDQ is Philox's 32×32→64 multiply), keys the round keys of the seed
// (philoxRoundKeys). Bitwise philoxPlanesGo.
//
//go:noescape
func philoxPlanesAVX512(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int)

// philoxPlanesAVX2 is philoxPlanesAVX512 on AVX2, 4 blocks a pass: n a multiple of 4.
//
//go:noescape
func philoxPlanesAVX2(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int)

// fillPhiloxPlanes is philoxPlanesGo's result for blocks b0 .. b0+n−1 (n ≤
// philoxPlaneBlocks): the AVX-512 or AVX2 kernel where the CPU has it (each also computes
// the blocks up to its next pass, which nobody reads), else the Go. keys must be
// philoxRoundKeys(seed).
func fillPhiloxPlanes(p *philoxPlanes, keys *[20]uint32, seed, pos uint64, b0 uint32, n int) {
	switch {
	case n <= 0:
	case vec.AcceleratedAVX512():
		philoxPlanesAVX512(p, keys, pos, b0, (n+7)&^7)
	case vec.Accelerated():
		philoxPlanesAVX2(p, keys, pos, b0, (n+3)&^3)
	default:
		philoxPlanesGo(p, seed, pos, b0, n)
	}
}

// philoxPlaneKernels are the kernels this CPU runs, by name, each with its pass (for the
// differential tests, which check every one whatever TPSLICE_ISA picks).
func philoxPlaneKernels() map[string]func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int) {
	k := map[string]func(*philoxPlanes, *[20]uint32, uint64, uint32, int){}
	if vec.AcceleratedAVX512() {
		k["avx512"] = func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int) {
			philoxPlanesAVX512(p, keys, pos, b0, (n+7)&^7)
		}
	}
	if vec.Accelerated() {
		k["avx2"] = func(p *philoxPlanes, keys *[20]uint32, pos uint64, b0 uint32, n int) {
			philoxPlanesAVX2(p, keys, pos, b0, (n+3)&^3)
		}
	}
	return k
}
