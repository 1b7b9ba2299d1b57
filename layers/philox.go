package layers

import "math"

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
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	for round := range 10 {
		if round > 0 {
			k0 += w0
			k1 += w1
		}
		p0, p1 := uint64(m0)*uint64(c0), uint64(m1)*uint64(c2) // the 32×32→64 products
		c0, c1, c2, c3 = uint32(p1>>32)^c1^k0, uint32(p1), uint32(p0>>32)^c3^k1, uint32(p0)
	}
	return [4]uint32{c0, c1, c2, c3}
}

// Uniform returns the uniform draw in (0, 1) of token id at draw pos of the stream seed:
// word id mod 4 of Philox4x32 with key seed and counter (id/4, pos), as (w + ½)/2³², so
// one block serves four neighbouring ids. It is a pure function of its arguments: every
// rank computes the same draw for a token whichever shard holds it.
func Uniform(seed, pos uint64, id int32) float64 {
	return unit(philoxBlock(seed, pos, id)[id&3])
}

// philoxBlock is the Philox4x32 block of tokens 4·(id/4) to 4·(id/4)+3.
func philoxBlock(seed, pos uint64, id int32) [4]uint32 {
	return Philox4x32([2]uint32{uint32(seed), uint32(seed >> 32)}, [4]uint32{uint32(id) >> 2, uint32(pos), uint32(pos >> 32), 0})
}

// unit maps a 32-bit word into (0, 1), never 0 or 1.
func unit(w uint32) float64 { return (float64(w) + 0.5) / (1 << 32) }

// Gumbel returns the standard Gumbel noise −log(−log u) of token id at draw pos of the
// stream seed, u its Uniform draw. Adding it to logit/T and taking the argmax draws from
// softmax(logit/T) (the Gumbel-max trick).
func Gumbel(seed, pos uint64, id int32) float64 { return gumbel(Uniform(seed, pos, id)) }

func gumbel(u float64) float64 { return -math.Log(-math.Log(u)) }
