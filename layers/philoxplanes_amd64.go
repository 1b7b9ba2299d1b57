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

// fillPhiloxPlanes is philoxPlanesGo's result for blocks b0 .. b0+n−1 (n ≤
// philoxPlaneBlocks): the AVX-512 kernel where the CPU has it (it also computes the
// blocks up to the next multiple of 8, which nobody reads), else the Go. keys must be
// philoxRoundKeys(seed).
func fillPhiloxPlanes(p *philoxPlanes, keys *[20]uint32, seed, pos uint64, b0 uint32, n int) {
	if !vec.AcceleratedAVX512() || n <= 0 {
		philoxPlanesGo(p, seed, pos, b0, n)
		return
	}
	philoxPlanesAVX512(p, keys, pos, b0, (n+7)&^7)
}
