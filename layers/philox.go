package layers

import (
	"math"
	"math/bits"
)

// Philox4x32 is the counter-based generator Philox4x32-10 of Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3" (SC'11), as Random123, cuRAND and PyTorch's CUDA
// generator define it: ten rounds of two 32×32→64 multiplies mixing a 128-bit counter
// under a 64-bit key that a Weyl sequence bumps between rounds. It keeps no state: the
// same (key, counter) gives the same four words on any rank, in any order, which is what
// a draw that must not depend on the vocabulary's sharding or the batch needs.
func Philox4x32(key [2]uint32, ctr [4]uint32) [4]uint32 {
	const (
		m0, m1 = 0xD2511F53, 0xCD9E8D57 // multipliers
		w0, w1 = 0x9E3779B9, 0xBB67AE85 // key increments (golden ratio, √3 − 1)
	)
	k0, k1 := key[0], key[1]
	c := ctr
	for round := range 10 {
		if round > 0 {
			k0 += w0
			k1 += w1
		}
		hi0, lo0 := bits.Mul32(m0, c[0])
		hi1, lo1 := bits.Mul32(m1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0}
	}
	return c
}

// Gumbel returns the standard Gumbel noise −log(−log u) of token id at draw pos of the
// stream seed, u uniform in (0, 1) from 53 bits of Philox4x32 with key seed and counter
// (id, pos): a pure function of its arguments, so every rank computes the same noise for
// a token whichever shard holds it. Adding it to logit/T and taking the argmax draws from
// softmax(logit/T) (the Gumbel-max trick).
func Gumbel(seed, pos uint64, id int32) float64 {
	w := Philox4x32([2]uint32{uint32(seed), uint32(seed >> 32)}, [4]uint32{uint32(id), uint32(pos), uint32(pos >> 32), 0})
	v := (uint64(w[0])<<32 | uint64(w[1])) >> 11
	u := (float64(v) + 0.5) / (1 << 53) // never 0 or 1
	return -math.Log(-math.Log(u))
}
