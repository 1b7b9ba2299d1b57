package comm

import (
	"fmt"
	"testing"
)

// BenchmarkWire times writing then reading one slot's worth of f32 on one core, per
// protocol, against a plain copy each way (what Simple's data costs): what a step of LL or
// LL128 costs before any waiting.
//
//	go test -run '^$' -bench Wire ./comm/
func BenchmarkWire(b *testing.B) {
	const words = 8192
	u64 := make([]uint64, words)
	f32 := make([]float32, 2*words)
	s := slot{u64: u64, f32: f32}
	for _, w := range []wire{llWire{}, ll128Wire{}} {
		n := w.elems(words)
		src, dst := make([]float32, n), make([]float32, n)
		b.Run(fmt.Sprintf("%v/%d", w.proto(), n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			flag := uint32(0)
			for b.Loop() {
				flag++
				w.put(s, src, flag)
				if w.take(s, dst, 0, flag) != n {
					b.Fatal("slot incomplete")
				}
			}
		})
		b.Run(fmt.Sprintf("copy/%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				copy(f32, src)
				copy(dst, f32[:n])
			}
		})
	}
}
