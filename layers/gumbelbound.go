package layers

import "math"

// gapStep is the spacing of the gaps gumbelBelow holds draws for: a token whose scaled
// logit trails the best score by more than gap k·gapStep is ruled out by its draw alone
// when that draw is at most gumbelBelow[k].
const gapStep = 0.25

// gumbelBelow[k] is a draw u whose noise gumbel(u), as computed, is below k·gapStep by
// a margin (gapMargin) that no rounding of the logarithms closes: exp(−exp(−g)) at g =
// k·gapStep − gapMargin, stepped down until the computed noise agrees. Gaps up to 16 (a
// draw within 1.1e−7 of 1) are held; a larger gap uses the last entry.
var gumbelBelow = func() (b [65]float64) {
	for k := range b {
		g := float64(k)*gapStep - gapMargin
		u := math.Exp(-math.Exp(-g))
		for gumbel(u) > g {
			u = math.Nextafter(u, 0)
		}
		b[k] = u
	}
	return b
}()

// gapMargin keeps gumbelBelow's noise clear of its gap by far more than an ulp of the
// noise (about 2e−15 at 16), so that a draw below an entry has noise below the gap even
// were the logarithms off by a few ulps.
const gapMargin = 1e-9

// noiseBucketBits is how many high bits of a draw's 32-bit word pick its noiseBound.
const noiseBucketBits = 10

// noiseBound[i] bounds the noise of every draw whose word has high bits i (words
// i·2²² to (i+1)·2²² − 1): k·gapStep for the least k whose gumbelBelow[k] is at or
// above the bucket's largest draw, so the noise, monotone in the draw, is below it; +Inf
// where no entry is (draws within 1.1e−7 of 1). A bucket spans 2⁻¹⁰ of the draw, less
// than a step of the noise (0.25) for draws below 0.9956 (noise below 5.4); above, a
// bucket spans several steps and its bound is looser than gumbelBelow's, which only
// costs the logarithms of a few more of those 0.44% of tokens.
var noiseBound = func() (b [1 << noiseBucketBits]float64) {
	for i := range b {
		u := unit(uint32(i+1)<<(32-noiseBucketBits) - 1) // the bucket's largest draw (wraps at the last)
		b[i] = math.Inf(1)
		for k, g := range gumbelBelow {
			if u <= g {
				b[i] = float64(k) * gapStep
				break
			}
		}
	}
	return b
}()

// mayWin reports whether a token of scaled logit x and draw word w (its draw unit(w))
// may score above best, that is x + gumbel(unit(w)) > best, without taking gumbel's two
// logarithms where its draw rules it out: its noise is below bound = noiseBound[w's
// bucket], so its score, rounded, is at most x + bound rounded (rounding is monotone),
// and where that is at most best the token cannot win (a winner scores above best). It
// never rules out a token that would win (a false true only costs the logarithms), so the
// winner is the plain loop's, bit for bit. One table load, an add and a compare: the
// gap's bucket and its rounding check cost 70% of Winner once its draws were vectorized.
func mayWin(x float64, w uint32, best float64) bool {
	return x+noiseBound[w>>(32-noiseBucketBits)] > best
}
