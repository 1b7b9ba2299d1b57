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

// mayWin reports whether a token of scaled logit x and draw u may score above best,
// that is x + gumbel(u) > best, without taking gumbel's two logarithms where its draw
// rules it out: with the gap best − x at least k·gapStep, a draw u ≤ gumbelBelow[k] has
// gumbel(u) < k·gapStep and so a score of at most x + k·gapStep ≤ best, and a winner's
// is above best. It never rules out a token that would win (a false true only costs
// the logarithms), so the winner is the plain loop's, bit for bit.
func mayWin(x, u, best float64) bool {
	gap := best - x
	if !(gap > 0) { // x ahead of best (or best −Inf): it may win whatever its draw
		return true
	}
	k := len(gumbelBelow) - 1
	if gap < float64(k)*gapStep {
		k = int(gap / gapStep)
	}
	for k > 0 && x+float64(k)*gapStep > best { // rounding: the sum must not pass best
		k--
	}
	return u > gumbelBelow[k]
}
