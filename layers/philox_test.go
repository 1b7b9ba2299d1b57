package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPhilox4x32KnownAnswers: the known-answer vectors Random123 ships for
// philox4x32-10 (kat_vectors: counter, key, then the expected output).
func TestPhilox4x32KnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		require.Equal(t, tc.want, Philox4x32(tc.key, tc.ctr), "counter %08x key %08x", tc.ctr, tc.key)
	}
}

// TestGumbelMoments: the noise over many tokens has the standard Gumbel's mean (the
// Euler–Mascheroni constant) and variance π²/6, within five standard errors, and changes
// with each of seed, position and id.
func TestGumbelMoments(t *testing.T) {
	const n = 200000
	sum, sq := 0.0, 0.0
	for i := range n {
		g := Gumbel(7, uint64(i%13), int32(i))
		require.False(t, math.IsInf(g, 0) || math.IsNaN(g))
		sum += g
		sq += g * g
	}
	mean, variance := sum/n, sq/n-(sum/n)*(sum/n)
	wantVar := math.Pi * math.Pi / 6
	require.InDelta(t, 0.5772156649, mean, 5*math.Sqrt(wantVar/n))
	require.InDelta(t, wantVar, variance, 0.05)
	g := Gumbel(1, 2, 3)
	require.NotEqual(t, g, Gumbel(2, 2, 3))
	require.NotEqual(t, g, Gumbel(1, 3, 3))
	require.NotEqual(t, g, Gumbel(1, 2, 4))
}
