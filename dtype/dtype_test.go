package dtype_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

func TestStringParseRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		t    dtype.DType
		name string
		size int
	}{
		{dtype.F32, "f32", 4},
		{dtype.BF16, "bf16", 2},
		{dtype.F16, "f16", 2},
		{dtype.Q8_0, "q8_0", 0},
		{dtype.Q4_0, "q4_0", 0},
		{dtype.Q4_K, "q4_k", 0},
		{dtype.Q5_K, "q5_k", 0},
		{dtype.Q6_K, "q6_k", 0},
		{dtype.Q5_0, "q5_0", 0},
		{dtype.Q5_1, "q5_1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.name, tc.t.String())
			require.Equal(t, tc.size, tc.t.Size())
			require.True(t, tc.t.Valid())
			require.Equal(t, tc.size != 0, tc.t.Scalar())
			require.Equal(t, tc.size == 0, tc.t.Quantized())
			got, err := dtype.Parse(tc.t.String())
			require.NoError(t, err)
			require.Equal(t, tc.t, got)
		})
	}
}

func TestParseAliases(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want dtype.DType
	}{
		{"f32", dtype.F32},
		{"F32", dtype.F32},
		{"float32", dtype.F32},
		{"float", dtype.F32},
		{"  f32\n", dtype.F32},
		{"bf16", dtype.BF16},
		{"BF16", dtype.BF16},
		{"bfloat16", dtype.BF16},
		{"BFloat16", dtype.BF16},
		{"f16", dtype.F16},
		{"float16", dtype.F16},
		{"half", dtype.F16},
		{" HALF ", dtype.F16},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := dtype.Parse(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", " ", "fp32", "f64", "fp8", "int8", "bf 16", "f3 2", "dtype(1)", "f16x"} {
		t.Run(in, func(t *testing.T) {
			got, err := dtype.Parse(in)
			require.Error(t, err)
			require.Zero(t, got)
			require.False(t, got.Valid())
			require.Contains(t, err.Error(), "unknown dtype")
			require.Contains(t, err.Error(), `"`+in+`"`, "error must quote the input")
		})
	}
}

func TestInvalidDType(t *testing.T) {
	for _, tc := range []struct {
		t    dtype.DType
		name string
	}{
		{0, "dtype(0)"},
		{200, "dtype(200)"},
		{255, "dtype(255)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, tc.t.Valid())
			require.Zero(t, tc.t.Size())
			require.Equal(t, tc.name, tc.t.String())
			_, err := dtype.Parse(tc.t.String())
			require.Error(t, err)
		})
	}
}

// TestBlockTraits: block sizes and bytes as ggml-common.h defines the blocks, and what
// follows from them.
func TestBlockTraits(t *testing.T) {
	for _, tc := range []struct {
		t            dtype.DType
		block, bytes int
		bpw          float64
	}{
		{dtype.F32, 1, 4, 32},
		{dtype.BF16, 1, 2, 16},
		{dtype.F16, 1, 2, 16},
		{dtype.Q8_0, 32, 34, 8.5},
		{dtype.Q4_0, 32, 18, 4.5},
		{dtype.Q4_K, 256, 144, 4.5},
		{dtype.Q5_K, 256, 176, 5.5},
		{dtype.Q6_K, 256, 210, 6.5625},
		{dtype.Q5_0, 32, 22, 5.5},
		{dtype.Q5_1, 32, 24, 6},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			require.Equal(t, tc.block, tc.t.BlockSize())
			require.Equal(t, tc.bytes, tc.t.BlockBytes())
			require.Equal(t, tc.bpw, tc.t.BitsPerWeight())
			require.Equal(t, 3*tc.bytes, tc.t.Bytes(3*tc.block))
			require.True(t, tc.t.Whole(5*tc.block))
			require.NoError(t, tc.t.CheckRow(2*tc.block))
			if tc.block > 1 {
				require.False(t, tc.t.Whole(tc.block+1))
				require.ErrorContains(t, tc.t.CheckRow(tc.block+16), "not a whole number of")
			}
			require.ErrorContains(t, tc.t.CheckRow(0), "must be positive")
		})
	}
	require.ErrorContains(t, dtype.DType(0).CheckRow(32), "invalid dtype")
	require.Zero(t, dtype.DType(0).Bytes(32))
}

func TestNames(t *testing.T) {
	require.Equal(t, "f32, bf16 or f16", dtype.Names(dtype.DType.Scalar))
	require.Equal(t, "q8_0, q4_0, q4_k, q5_k, q6_k, q5_0 or q5_1", dtype.Names(dtype.DType.Quantized))
	require.Equal(t, "f32", dtype.Names(func(t dtype.DType) bool { return t == dtype.F32 }))
	_, err := dtype.Parse("q3_k")
	require.ErrorContains(t, err, `unknown dtype "q3_k" (want f32, bf16, f16, q8_0, q4_0, q4_k, q5_k, q6_k, q5_0 or q5_1)`)
}

func TestParseScalar(t *testing.T) {
	got, err := dtype.ParseScalar("BF16")
	require.NoError(t, err)
	require.Equal(t, dtype.BF16, got)
	_, err = dtype.ParseScalar("q4_k")
	require.ErrorContains(t, err, `dtype "q4_k" is a block type; want f32, bf16 or f16`)
	_, err = dtype.ParseScalar("fp8")
	require.ErrorContains(t, err, `unknown dtype "fp8" (want f32, bf16 or f16)`)
	got, err = dtype.Parse("Q4_K")
	require.NoError(t, err)
	require.Equal(t, dtype.Q4_K, got)
}
