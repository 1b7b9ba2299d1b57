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
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.name, tc.t.String())
			require.Equal(t, tc.size, tc.t.Size())
			require.True(t, tc.t.Valid())
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
		{4, "dtype(4)"},
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
