package vec

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestNarrowExhaustive compares Narrow with the reference for all 2³² float32 bit
// patterns, for bf16 and f16. It takes tens of seconds, so it runs only with
// VEC_EXHAUSTIVE=1:
//
//	VEC_EXHAUSTIVE=1 go test -run NarrowExhaustive -v ./vec/
func TestNarrowExhaustive(t *testing.T) {
	if os.Getenv("VEC_EXHAUSTIVE") == "" {
		t.Skip("set VEC_EXHAUSTIVE=1 to check all 2^32 inputs")
	}
	const batch = 1 << 16
	for _, typ := range dtypes16 {
		t.Run(typ.String(), func(t *testing.T) {
			workers := runtime.GOMAXPROCS(0)
			errs := make([]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					src := make([]float32, batch)
					want, got := make([]uint16, batch), make([]uint16, batch)
					for hi := uint32(w); hi < 1<<16 && errs[w] == ""; hi += uint32(workers) {
						for lo := range uint32(batch) {
							src[lo] = math.Float32frombits(hi<<16 | lo)
						}
						refNarrow(typ, want, src)
						Narrow(typ, got, src)
						for i := range want {
							if want[i] != got[i] {
								errs[w] = fmt.Sprintf("input %#08x: want %#04x, got %#04x", math.Float32bits(src[i]), want[i], got[i])
								break
							}
						}
					}
				})
			}
			wg.Wait()
			for _, e := range errs {
				if e != "" {
					t.Fatal(e)
				}
			}
		})
	}
}
