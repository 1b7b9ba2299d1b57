package layers

import (
	"fmt"
	"math"
)

// RowSampler is what a rank needs to sample one row on its vocabulary shard without
// gathering the logits: the row's logit adjustments and the key of its random stream.
// The zero value leaves the logits as they are and proposes the best candidates (greedy).
type RowSampler struct {
	// Temperature divides the logits of the draw and of the terms (Draw, Terms).
	Temperature float32
	// Draw has the rank propose, first, its shard's Gumbel-max winner: the token of the
	// largest logit/Temperature + Gumbel(Seed, Pos, id). The row's winner is the best of
	// the ranks' winners, exactly, whatever the sharding.
	Draw bool
	// Seed and Pos key the row's random stream (see Gumbel).
	Seed, Pos uint64
	// Terms has the rank report its shard's ShardLogSumExpAt terms of the adjusted logits
	// at Temperature: top-p needs the global mass.
	Terms bool
	// RepetitionPenalty divides the positive logits of the tokens marked Repeat and
	// multiplies the negative ones (0 or 1: none).
	RepetitionPenalty float32
	// Adjust lists the tokens whose logits change, each at most once, any rank's.
	Adjust []LogitAdjust
}

// LogitAdjust is one token's logit adjustment, applied in this order (vLLM's): Bias is
// added, Mask sets it to −Inf, Repeat applies the repetition penalty, Sub is subtracted
// (the frequency and presence penalties).
type LogitAdjust struct {
	// ID is the token's global id.
	ID int32
	// Bias is added to the logit (logit_bias).
	Bias float32
	// Mask sets the logit to −Inf (an end-of-generation token before min_tokens).
	Mask bool
	// Repeat applies RowSampler.RepetitionPenalty (a token of the prompt or output).
	Repeat bool
	// Sub is subtracted last (frequency penalty × count + presence penalty).
	Sub float32
}

// Apply adjusts a logits shard (element i is global id v0+i) in place: the tokens of
// r.Adjust it holds, one float32 operation order for each, so a token's adjusted logit
// is the same bits whichever shard holds it.
func (r *RowSampler) Apply(logits []float32, v0 int) {
	for _, a := range r.Adjust {
		i := int(a.ID) - v0
		if i < 0 || i >= len(logits) {
			continue
		}
		l := logits[i] + a.Bias
		if a.Mask {
			l = float32(math.Inf(-1))
		}
		if p := r.RepetitionPenalty; a.Repeat && p != 0 && p != 1 {
			if l > 0 {
				l /= p
			} else {
				l *= p
			}
		}
		logits[i] = l - a.Sub
	}
}

// Score is the Gumbel-max key of a token: logit/T + Gumbel(seed, pos, id), in f64. The
// token of the largest score is a draw from softmax(logits/T).
func Score(logit, temperature float32, seed, pos uint64, id int32) float64 {
	return float64(logit)/float64(temperature) + Gumbel(seed, pos, id)
}

// Winner returns the shard's Gumbel-max draw (element i is global id v0+i): the token of
// the largest Score, ties to the lower id, skipping −Inf and NaN logits (a shard with no
// other gives its first token, which can never win). r.Temperature must be > 0.
//
//	best := −Inf; for i := range logits { if s := Score(logits[i], …, v0+i); s > best { best, id = s, v0+i } }
//
// It takes the two logarithms of a token's noise only where the token may win
// (mayWin: a token whose logit/T trails the best score so far by a gap needs a draw
// whose noise exceeds that gap, which its draw alone rules out for most tokens), and it
// computes each Philox block once for its four tokens, 64 blocks a fillPhiloxPlanes call
// (the AVX-512 kernel where the CPU has it).
func (r *RowSampler) Winner(logits []float32, v0 int) (Candidate, error) {
	win, _, err := r.winner(logits, v0)
	return win, err
}

// winner is Winner, also counting the tokens whose noise it computed.
func (r *RowSampler) winner(logits []float32, v0 int) (win Candidate, noised int, err error) {
	if err := checkShard("gumbel-max", logits, v0); err != nil {
		return Candidate{}, 0, err
	}
	if len(logits) == 0 || !(r.Temperature > 0) {
		return Candidate{}, 0, fmt.Errorf("layers: gumbel-max: %d logits at temperature %v: want some, above 0", len(logits), r.Temperature)
	}
	t := float64(r.Temperature)
	win, best := Candidate{logits[0], int32(v0)}, math.Inf(-1)
	// The draws come philoxPlaneBlocks blocks at a time, computed by one vector kernel
	// call (the draw's stream was 60% of Winner's time one block at a time).
	keys := philoxRoundKeys(r.Seed)
	var planes philoxPlanes
	lastBlock := (v0 + len(logits) - 1) >> 2
	first, filled := 0, 0 // planes hold blocks first .. first+filled−1
	for i, l := range logits {
		if l != l || math.IsInf(float64(l), -1) {
			continue
		}
		id := int32(v0 + i)
		b := int(id>>2) - first
		if b >= filled {
			first, filled = int(id>>2), min(philoxPlaneBlocks, lastBlock+1-int(id>>2))
			fillPhiloxPlanes(&planes, &keys, r.Seed, r.Pos, uint32(first), filled)
			b = 0
		}
		x, w := float64(l), planes[id&3][b]
		if t != 1 { // the division was half of Winner's time; at 1 (serve's default) it is x
			x /= t
		}
		if !mayWin(x, w, best) {
			continue
		}
		noised++
		if s := x + gumbel(unit(w)); s > best {
			win, best = Candidate{l, id}, s
		}
	}
	return win, noised, nil
}

// ShardLogSumExpAt is ShardLogSumExp at a temperature: the shard's largest logit m and
// Σ exp((logit − m)/T) in f64, the terms of the softmax(logits/T) normaliser that ranks
// combine instead of gathering the logits. An empty or all −Inf shard gives (−Inf, 0).
func ShardLogSumExpAt(logits []float32, temperature float32) (m float32, sum float64) {
	m = float32(math.Inf(-1))
	for _, l := range logits {
		if l > m {
			m = l
		}
	}
	if math.IsInf(float64(m), -1) {
		return m, 0
	}
	for _, l := range logits {
		if l == l {
			sum += math.Exp((float64(l) - float64(m)) / float64(temperature))
		}
	}
	return m, sum
}

// Propose is a rank's part of sampling a row without gathering its logits: it applies r
// to the logits shard (element i is global id v0+i) in place and writes the rank's
// candidates into dst: with Draw the shard's Winner first, then its best len(dst)−1 by
// adjusted logit (TopK), otherwise its best len(dst). It returns how many it wrote and,
// where r.Terms, the shard's ShardLogSumExpAt terms at r.Temperature (else −Inf, 0).
func (r *RowSampler) Propose(dst []Candidate, logits []float32, v0 int) (n int, m float32, sum float64, err error) {
	r.Apply(logits, v0)
	m = float32(math.Inf(-1))
	if r.Terms {
		m, sum = ShardLogSumExpAt(logits, r.Temperature)
	}
	top := dst
	if r.Draw && len(dst) > 0 {
		if dst[0], err = r.Winner(logits, v0); err != nil {
			return 0, m, sum, err
		}
		top, n = dst[1:], 1
	}
	got, err := TopK(top, logits, v0)
	return n + got, m, sum, err
}
