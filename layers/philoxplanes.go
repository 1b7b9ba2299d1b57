package layers

// philoxPlaneBlocks is how many Philox blocks (four tokens each) one philoxPlanes holds:
// 256 tokens, 1 KiB on the stack, a multiple of the AVX-512 kernel's 8 blocks a pass.
const philoxPlaneBlocks = 64

// philoxPlanes holds the Philox4x32 blocks of consecutive counters word by word: word w
// of block b0+j is [w][j]. Planar, so a vector kernel stores each word of 8 blocks with
// one instruction, and token id reads its word at [id&3][id>>2 − b0].
type philoxPlanes [4][philoxPlaneBlocks]uint32

// philoxRoundKeys is the key schedule of Philox4x32 under key seed: the pair (k0, k1) of
// round r at [2r] and [2r+1], as Philox4x32 bumps it between rounds.
func philoxRoundKeys(seed uint64) (keys [20]uint32) {
	k0, k1 := uint32(seed), uint32(seed>>32)
	for r := range 10 {
		keys[2*r], keys[2*r+1] = k0, k1
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return keys
}

// philoxPlanesGo is the reference loop of fillPhiloxPlanes: block b0+j of draw pos, for
// j < n (n ≤ philoxPlaneBlocks), each the Philox4x32 that philoxBlock computes.
//
//	for j := range n { blk := Philox4x32(seedKey, {b0 + j, pos, pos>>32, 0}); p[w][j] = blk[w] }
func philoxPlanesGo(p *philoxPlanes, seed, pos uint64, b0 uint32, n int) {
	key := [2]uint32{uint32(seed), uint32(seed >> 32)}
	for j := range n {
		blk := Philox4x32(key, [4]uint32{b0 + uint32(j), uint32(pos), uint32(pos >> 32), 0})
		for w := range blk {
			p[w][j] = blk[w]
		}
	}
}
