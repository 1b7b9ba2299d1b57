//go:build !amd64 || noasm

package layers

// isaLinearKernels are the instruction sets' kernels the differential tests force: none
// without the amd64 assembly.
func isaLinearKernels() []linearKernel { return nil }

// isaBF16DotKernels are the bf16-dot kernels checkBF16Dot forces: none without the amd64
// assembly.
func isaBF16DotKernels() []bf16DotKernel { return nil }
