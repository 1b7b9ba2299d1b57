package layers

import (
	"fmt"
	"math"
)

// RopeLayout says which elements of a head vector RoPE rotates together.
type RopeLayout uint8

const (
	// RopeAdjacent rotates adjacent pairs (x[2j], x[2j+1]): GGUF / llama.cpp's normal RoPE
	// (GGUF stores Llama q/k weights permuted for it).
	RopeAdjacent RopeLayout = iota + 1
	// RopeHalfSplit rotates (x[j], x[j+d/2]): Hugging Face's rotate_half (GPT-NeoX style).
	RopeHalfSplit
)

// String names the layout ("adjacent", "half-split").
func (l RopeLayout) String() string {
	switch l {
	case RopeAdjacent:
		return "adjacent"
	case RopeHalfSplit:
		return "half-split"
	}
	return fmt.Sprintf("RopeLayout(%d)", uint8(l))
}

// RopeTable holds cos and sin of every rotation angle for positions [0, MaxPos) of a head
// dimension d: angle(p, j) = p · invFreq[j] for j in [0, d/2), by default
// invFreq[j] = θ^(−2j/d). Angles, cos and sin are computed in float64 and rounded once to
// f32, so the table is the same on every machine (Hugging Face computes the frequencies
// and angles in f32, llama.cpp accumulates them in f32: both can differ from this table by
// a few f32 ulps at large positions). A table is read-only after construction and may be
// shared by any number of goroutines.
type RopeTable struct {
	headDim, maxPos int
	cos, sin        []float32 // [maxPos, headDim/2]
}

// NewRopeTable builds the table for head dimension headDim (even, positive), positions
// [0, maxPos) and base theta (> 0), with invFreq[j] = math.Pow(theta, −2j/headDim).
func NewRopeTable(headDim, maxPos int, theta float64) (*RopeTable, error) {
	if headDim <= 0 || headDim%2 != 0 {
		return nil, fmt.Errorf("layers: rope: head dimension %d must be even and positive", headDim)
	}
	if !(theta > 0) || math.IsInf(theta, 1) {
		return nil, fmt.Errorf("layers: rope: theta=%v must be finite and positive", theta)
	}
	inv := make([]float64, headDim/2)
	for j := range inv {
		inv[j] = math.Pow(theta, -float64(2*j)/float64(headDim))
	}
	return NewRopeTableFreqs(maxPos, inv)
}

// NewRopeTableFreqs builds the table for positions [0, maxPos) from explicit inverse
// frequencies (head dimension 2·len(invFreq)), for scaled RoPE variants (Llama 3.1's
// rope_scaling, NTK, linear) whose frequencies the caller computes:
//
//	cos[p][j] = float32(math.Cos(float64(p) * invFreq[j]))
//	sin[p][j] = float32(math.Sin(float64(p) * invFreq[j]))
func NewRopeTableFreqs(maxPos int, invFreq []float64) (*RopeTable, error) {
	half := len(invFreq)
	if half == 0 {
		return nil, fmt.Errorf("layers: rope: no frequencies")
	}
	if maxPos <= 0 || maxPos > math.MaxInt32 || maxPos > math.MaxInt/half {
		return nil, fmt.Errorf("layers: rope: maxPos=%d must be in [1, %d] for head dimension %d", maxPos, min(math.MaxInt32, math.MaxInt/half), 2*half)
	}
	for j, f := range invFreq {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("layers: rope: inverse frequency %d is %v", j, f)
		}
	}
	t := &RopeTable{
		headDim: 2 * half,
		maxPos:  maxPos,
		cos:     make([]float32, maxPos*half),
		sin:     make([]float32, maxPos*half),
	}
	for p := range maxPos {
		for j, f := range invFreq {
			a := float64(p) * f
			t.cos[p*half+j] = float32(math.Cos(a))
			t.sin[p*half+j] = float32(math.Sin(a))
		}
	}
	return t, nil
}

// HeadDim returns the head dimension the table rotates.
func (t *RopeTable) HeadDim() int { return t.headDim }

// MaxPos returns one past the largest position the table covers.
func (t *RopeTable) MaxPos() int { return t.maxPos }

// CosSin returns the table's cos and sin at position p (each HeadDim/2 long, read-only),
// for p in [0, MaxPos).
func (t *RopeTable) CosSin(p int) (cos, sin []float32) {
	h := t.headDim / 2
	return t.cos[p*h : (p+1)*h : (p+1)*h], t.sin[p*h : (p+1)*h : (p+1)*h]
}

// Apply rotates q ([tokens, heads, headDim]) and k ([tokens, kvHeads, headDim]) in place,
// token t at position pos[t] (tokens = len(pos)), with c, s the table's cos and sin at
// (pos[t], j) and each product rounded to f32 before the add:
//
//	for every head vector v of token t, for j in [0, d/2):
//		a, b := index pair (2j, 2j+1) for RopeAdjacent, (j, j+d/2) for RopeHalfSplit
//		x, y := v[a], v[b]
//		v[a] = float32(x*c) - float32(y*s)
//		v[b] = float32(x*s) + float32(y*c)
//
// Either of q and k may be empty (with heads or kvHeads 0). It does not allocate.
func (t *RopeTable) Apply(layout RopeLayout, q []float32, heads int, k []float32, kvHeads int, pos []int32) error {
	if layout != RopeAdjacent && layout != RopeHalfSplit {
		return fmt.Errorf("layers: rope: unknown layout %v", layout)
	}
	d, n := t.headDim, len(pos)
	if heads < 0 || kvHeads < 0 {
		return fmt.Errorf("layers: rope: negative head count (heads=%d, kvHeads=%d)", heads, kvHeads)
	}
	if len(q) != n*heads*d {
		return fmt.Errorf("layers: rope: len(q)=%d, want tokens·heads·headDim = %d·%d·%d = %d", len(q), n, heads, d, n*heads*d)
	}
	if len(k) != n*kvHeads*d {
		return fmt.Errorf("layers: rope: len(k)=%d, want tokens·kvHeads·headDim = %d·%d·%d = %d", len(k), n, kvHeads, d, n*kvHeads*d)
	}
	for i, p := range pos {
		if p < 0 || int(p) >= t.maxPos {
			return fmt.Errorf("layers: rope: token %d at position %d, outside the table's [0, %d)", i, p, t.maxPos)
		}
	}
	for i, p := range pos {
		c, s := t.CosSin(int(p))
		rotateHeads(layout, q[i*heads*d:(i+1)*heads*d], d, c, s)
		rotateHeads(layout, k[i*kvHeads*d:(i+1)*kvHeads*d], d, c, s)
	}
	return nil
}

// rotateHeads rotates every head vector (d long) of x by the angles whose cos and sin are
// c and s (d/2 long each).
func rotateHeads(layout RopeLayout, x []float32, d int, c, s []float32) {
	h := d / 2
	c, s = c[:h], s[:h]
	for off := 0; off+d <= len(x); off += d {
		v := x[off : off+d : off+d]
		if layout == RopeHalfSplit {
			lo, hi := v[:h], v[h:][:h]
			for j := range lo {
				a, b := lo[j], hi[j]
				lo[j] = float32(a*c[j]) - float32(b*s[j])
				hi[j] = float32(a*s[j]) + float32(b*c[j])
			}
			continue
		}
		for j := range c {
			a, b := v[2*j], v[2*j+1]
			v[2*j] = float32(a*c[j]) - float32(b*s[j])
			v[2*j+1] = float32(a*s[j]) + float32(b*c[j])
		}
	}
}
