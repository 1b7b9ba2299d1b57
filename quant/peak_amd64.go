//go:build amd64 && !noasm

package quant

// The peak probes (peak_amd64.s), which BenchmarkVNNIPeak and BenchmarkFMAPeak time to state
// the GEMM kernels' achieved fraction of what the cores can do: vnniPeakLoop runs n rounds
// of 16 independent VPDPBUSD on zmm registers (each 64 int8 products) and returns the sum
// of the 16 accumulators' first lanes, 64·n, so a test sees that every instruction ran;
// fmaPeakLoop likewise runs n rounds of 16 independent zmm VFMADD231PS (each 16 f32
// products, the float GEMMs' instruction: layers' gemm_avx512_amd64.s) and returns 16·n
// (exact in f32 below 2²⁴); addChainLoop runs n rounds of 8 dependent one-cycle ADDQ, 8·n
// cycles, and returns 8·n: its rate is the core's clock.

//go:noescape
func vnniPeakLoop(n int) int

//go:noescape
func fmaPeakLoop(n int) int

//go:noescape
func addChainLoop(n int) int
