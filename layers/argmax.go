package layers

import (
	"fmt"
	"math"
)

// Candidate is one sampling candidate: a logit and its global token id. Ranks find their
// best candidates over their vocab shard (Argmax, TopK), the candidates are all-gathered,
// and every rank picks the same winners with MergeTopK, so greedy and top-k sampling never
// gather the full logits.
type Candidate struct {
	Logit float32
	ID    int32
}

// Before reports whether a ranks before b: the higher logit first, equal logits (−0 = +0)
// by the lower id, NaN after every number (NaNs among themselves by id). It is a strict
// total order on candidates with distinct ids, so every rank ranks them the same way.
func (a Candidate) Before(b Candidate) bool {
	an, bn := a.Logit != a.Logit, b.Logit != b.Logit
	switch {
	case an != bn:
		return bn
	case !an && a.Logit != b.Logit:
		return a.Logit > b.Logit
	}
	return a.ID < b.ID
}

// Argmax returns the first candidate in Before order of a logits shard whose element i is
// the logit of global id v0+i (greedy sampling's local step):
//
//	best := Candidate{logits[0], v0}
//	for i := range logits { if c := (Candidate{logits[i], v0+i}); c.Before(best) { best = c } }
func Argmax(logits []float32, v0 int) (Candidate, error) {
	if err := checkShard("argmax", logits, v0); err != nil {
		return Candidate{}, err
	}
	if len(logits) == 0 {
		return Candidate{}, fmt.Errorf("layers: argmax: empty logits")
	}
	best := 0
	for best < len(logits) && logits[best] != logits[best] { // skip leading NaNs
		best++
	}
	if best == len(logits) {
		return Candidate{logits[0], int32(v0)}, nil
	}
	m := logits[best]
	for i := best + 1; i < len(logits); i++ {
		if logits[i] > m { // strict: ties keep the lower index; NaN never wins
			m, best = logits[i], i
		}
	}
	return Candidate{m, int32(v0 + best)}, nil
}

// TopK writes the first min(len(dst), len(logits)) candidates in Before order of a logits
// shard (element i is global id v0+i) into dst, best first, and returns how many it wrote:
//
//	sort all Candidate{logits[i], v0+i} by Before; copy(dst, sorted)
//
// It keeps a heap in dst (O(n log k)) and does not allocate.
func TopK(dst []Candidate, logits []float32, v0 int) (int, error) {
	if err := checkShard("top-k", logits, v0); err != nil {
		return 0, err
	}
	k := min(len(dst), len(logits))
	if k == 0 {
		return 0, nil
	}
	h := dst[:k]
	for i := range k {
		h[i] = Candidate{logits[i], int32(v0 + i)}
	}
	heapify(h)
	for i := k; i < len(logits); i++ {
		x := logits[i]
		if w := h[0].Logit; x < w || x != x { // cannot beat the worst kept (fast reject)
			continue
		}
		if c := (Candidate{x, int32(v0 + i)}); c.Before(h[0]) {
			h[0] = c
			siftDown(h, 0)
		}
	}
	heapSort(h)
	return k, nil
}

// MergeTopK writes the first min(len(dst), len(cands)) of cands in Before order into dst,
// best first, and returns how many it wrote: the merge of every rank's TopK (or Argmax)
// after the all-gather. cands is not modified; dst must not overlap it.
func MergeTopK(dst, cands []Candidate) int {
	k := min(len(dst), len(cands))
	if k == 0 {
		return 0
	}
	h := dst[:k]
	copy(h, cands[:k])
	heapify(h)
	for _, c := range cands[k:] {
		if c.Before(h[0]) {
			h[0] = c
			siftDown(h, 0)
		}
	}
	heapSort(h)
	return k
}

// checkShard validates that every global id v0+i of a shard fits an int32.
func checkShard(op string, logits []float32, v0 int) error {
	if v0 < 0 || v0 > math.MaxInt32-max(len(logits)-1, 0) {
		return fmt.Errorf("layers: %s: shard ids [%d, %d) not within int32", op, v0, v0+len(logits))
	}
	return nil
}

// The heap keeps the candidate that ranks last at the root: h[i] never ranks before its
// children.

func heapify(h []Candidate) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func siftDown(h []Candidate, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && h[c].Before(h[r]) {
			c = r // the child that ranks later
		}
		if !h[i].Before(h[c]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// heapSort orders a heap best first: the root (the last in rank) goes to the end, repeatedly.
func heapSort(h []Candidate) {
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		siftDown(h[:n], 0)
	}
}

// ShardLogSumExp returns the two terms of a logits shard's part of a log-sum-exp, its
// largest logit m and Σ exp(logit − m) (summed in f64), so that ranks combine their
// shards with CombineLogSumExp instead of gathering the logits:
//
//	m := max(logits); for _, l := range logits { sum += exp(float64(l) − float64(m)) }
//
// An empty shard gives (−Inf, 0); NaN logits are skipped.
func ShardLogSumExp(logits []float32) (m float32, sum float64) {
	return ShardLogSumExpAt(logits, 1) // dividing by 1 is exact: the same bits
}

// CombineLogSumExp returns log Σ exp over the union of the shards whose ShardLogSumExp
// terms are (terms[2r], terms[2r+1]): CombineLogSumExpAt at temperature 1.
func CombineLogSumExp(terms []float32) float64 { return CombineLogSumExpAt(terms, 1) }

// CombineLogSumExpAt returns log Σ exp(logit/T) over the union of the shards whose
// ShardLogSumExpAt terms at temperature T are (terms[2r], terms[2r+1]), in f64 and in
// shard order:
//
//	M := max over r of terms[2r]; return M/T + log(Σ_r terms[2r+1]·exp((terms[2r] − M)/T))
//
// No shard with tokens gives −Inf.
func CombineLogSumExpAt(terms []float32, temperature float32) float64 {
	t, top := float64(temperature), math.Inf(-1)
	for r := 0; r+1 < len(terms); r += 2 {
		if terms[r+1] > 0 {
			top = max(top, float64(terms[r]))
		}
	}
	if math.IsInf(top, -1) {
		return top
	}
	sum := 0.0
	for r := 0; r+1 < len(terms); r += 2 {
		if terms[r+1] > 0 {
			sum += float64(terms[r+1]) * math.Exp((float64(terms[r])-top)/t)
		}
	}
	return top/t + math.Log(sum)
}
