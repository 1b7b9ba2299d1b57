package layers

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// This file holds the plain reference loops the kernels are checked against, bit for bit,
// and the helpers the tests share. The references index everything directly, widen one
// element at a time with dtype.ToF32 and never tile or block.

// refDot is the package's dot product as its documentation writes it.
func refDot(x, w []float32) float32 {
	var acc [8]float32
	for i := range x {
		acc[i%8] += float32(x[i] * w[i])
	}
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

// refSum is the package's sum as its documentation writes it.
func refSum(x []float32) float32 {
	var acc [8]float32
	for i := range x {
		acc[i%8] += x[i]
	}
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

// refWeight is element (r, c) of w, widened.
func refWeight(w Matrix, r, c int) float32 {
	if w.DType == dtype.F32 {
		return w.F32s()[r*w.Cols+c]
	}
	return dtype.ToF32(w.DType, w.Bits()[r*w.Cols+c])
}

// refLinear is LinearRows' reference loop over rows [o0, o1).
func refLinear(y, x []float32, w Matrix, o0, o1 int) {
	in, out := w.Cols, w.Rows
	for m := range len(x) / in {
		for o := o0; o < o1; o++ {
			var acc [8]float32
			for i := range in {
				acc[i%8] = fma32(x[m*in+i], refWeight(w, o, i), acc[i%8])
			}
			y[m*out+o] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		}
	}
}

// refRMSNorm is RMSNorm's reference loop.
func refRMSNorm(out, x, w []float32, eps float32) {
	n := len(w)
	for r := 0; r < len(x); r += n {
		var acc [8]float32
		for i := range n {
			acc[i%8] += float32(x[r+i] * x[r+i])
		}
		ss := ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		rs := float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
		for i := range n {
			out[r+i] = float32(x[r+i]*rs) * w[i]
		}
	}
}

// refRope rotates every head vector (d long) of x at position pos as Apply documents, with
// the angles computed directly (no table).
func refRope(layout RopeLayout, x []float32, d int, pos int, theta float64) {
	for off := 0; off < len(x); off += d {
		for j := range d / 2 {
			a := float64(pos) * math.Pow(theta, -float64(2*j)/float64(d))
			c, s := float32(math.Cos(a)), float32(math.Sin(a))
			ia, ib := off+2*j, off+2*j+1
			if layout == RopeHalfSplit {
				ia, ib = off+j, off+j+d/2
			}
			xa, xb := x[ia], x[ib]
			x[ia] = float32(xa*c) - float32(xb*s)
			x[ib] = float32(xa*s) + float32(xb*c)
		}
	}
}

// refAttention is AttentionRange's reference loop over dense, unpaged K and V: for token t,
// keys[t] and values[t] are the rows [P, kvHeads, d] of its sequence's positions 0..Pos[t].
func refAttention(out, q []float32, heads, kvHeads, d int, pos []int32, keys, values [][]float32) {
	g := heads / kvHeads
	scale := float32(1 / math.Sqrt(float64(d)))
	for t := range pos {
		P := int(pos[t]) + 1
		for h := range heads {
			kh := h / g
			qh := q[(t*heads+h)*d : (t*heads+h+1)*d]
			s := make([]float32, P)
			for p := range P {
				s[p] = refDot(qh, keys[t][(p*kvHeads+kh)*d:(p*kvHeads+kh+1)*d]) * scale
			}
			m := s[0]
			for _, x := range s {
				m = max(m, x)
			}
			for p := range s {
				s[p] = expf(s[p] - m)
			}
			l := refSum(s)
			for i := range d {
				acc := float32(0)
				for p := range P {
					acc += float32(s[p] * values[t][(p*kvHeads+kh)*d+i])
				}
				out[(t*heads+h)*d+i] = acc / l
			}
		}
	}
}

// refAttention64 is attention in float64 with math.Exp, the semantic check that does not
// share the kernel's order.
func refAttention64(q []float32, heads, kvHeads, d int, pos []int32, keys, values [][]float32) []float64 {
	out := make([]float64, len(q))
	g := heads / kvHeads
	for t := range pos {
		P := int(pos[t]) + 1
		for h := range heads {
			kh := h / g
			s := make([]float64, P)
			m := math.Inf(-1)
			for p := range P {
				for i := range d {
					s[p] += float64(q[(t*heads+h)*d+i]) * float64(keys[t][(p*kvHeads+kh)*d+i])
				}
				s[p] /= math.Sqrt(float64(d))
				m = math.Max(m, s[p])
			}
			l := 0.0
			for p := range s {
				s[p] = math.Exp(s[p] - m)
				l += s[p]
			}
			for i := range d {
				for p := range P {
					out[(t*heads+h)*d+i] += s[p] * float64(values[t][(p*kvHeads+kh)*d+i]) / l
				}
			}
		}
	}
	return out
}

// refSwiGLU is SwiGLU's reference loop.
func refSwiGLU(out, gate, up []float32) {
	for i := range out {
		out[i] = gate[i] / (1 + expf(-gate[i])) * up[i]
	}
}

// refTopK sorts every candidate of the shard by Before and returns the first k.
func refTopK(logits []float32, v0, k int) []Candidate {
	all := make([]Candidate, len(logits))
	for i, x := range logits {
		all[i] = Candidate{x, int32(v0 + i)}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Before(all[j]) })
	return all[:min(k, len(all))]
}

// randF32 returns n values uniform in [−scale, scale).
func randF32(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (2*r.Float32() - 1) * scale
	}
	return s
}

// randMatrix returns a random [rows, cols] matrix of dtype t with values in [−1, 1).
func randMatrix(r *rand.Rand, t dtype.DType, rows, cols int) Matrix {
	f := randF32(r, rows*cols, 1)
	if t == dtype.F32 {
		return F32Matrix(rows, cols, f)
	}
	b := make([]uint16, len(f))
	for i, v := range f {
		b[i] = dtype.FromF32(t, v)
	}
	return Matrix16(t, rows, cols, b)
}

// requireBits fails unless got and want hold the same f32 bit patterns.
func requireBits(t testing.TB, want, got []float32, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, len(want), len(got), msgAndArgs...)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "bits differ", "element %d: got %v (%#08x), want %v (%#08x) %v",
				i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), msgAndArgs)
		}
	}
}

var dtypes = []dtype.DType{dtype.F32, dtype.BF16, dtype.F16}
