package format_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/format"
)

// metaFixture writes a GGUF file of one key of every type the getters read and returns
// its path.
func metaFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.gguf")
	require.NoError(t, format.WriteGGUF(path, []format.GGUFKV{
		{Key: "s", Value: "text"},
		{Key: "b", Value: true},
		{Key: "u32", Value: uint32(7)},
		{Key: "i32", Value: int32(-3)},
		{Key: "u64", Value: uint64(math.MaxUint64)},
		{Key: "i64", Value: int64(math.MaxInt32) + 1},
		{Key: "f32", Value: float32(0.1)},
		{Key: "strs", Value: []string{" lead", "trail\r", "\u00a0\u00a0", "", "mid dle"}},
		{Key: "f32s", Value: []float32{-1, 0.5}},
		{Key: "i32s", Value: []int32{1, -2, 3}},
	}, nil))
	return path
}

func TestGGUFMetaReadsEveryType(t *testing.T) {
	path := metaFixture(t)
	gf, err := format.ParseGGUF(path)
	require.NoError(t, err)
	m := format.NewGGUFMeta(path, gf)

	s, ok, err := m.String("s")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "text", s)
	b, ok, err := m.Bool("b")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, b)
	for key, want := range map[string]int64{"u32": 7, "i32": -3, "i64": math.MaxInt32 + 1} {
		v, ok, err := m.Int64(key)
		require.NoError(t, err, key)
		require.True(t, ok, key)
		require.Equal(t, want, v, key)
	}
	n, ok, err := m.Int("u32")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 7, n)
	f, ok, err := m.Float("f32")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, float64(float32(0.1)), f, "a float32 is widened exactly")
	f, _, err = m.Float("u32")
	require.NoError(t, err)
	require.Equal(t, 7.0, f)

	strs, ok, err := m.Strings("strs")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{" lead", "trail\r", "\u00a0\u00a0", "", "mid dle"}, strs, "white space is kept, as stored")
	f32s, _, err := m.Float32s("f32s")
	require.NoError(t, err)
	require.Equal(t, []float32{-1, 0.5}, f32s)
	i32s, _, err := m.Int32s("i32s")
	require.NoError(t, err)
	require.Equal(t, []int32{1, -2, 3}, i32s)
	l, ok, err := m.ArrayLen("strs")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 5, l)

	// An absent key is no error: the caller decides whether it is required.
	_, ok, err = m.String("absent")
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = m.Strings("absent")
	require.NoError(t, err)
	require.False(t, ok)
	require.EqualError(t, m.Missing("absent"), "gguf "+path+": metadata key absent missing")
}

// TestGGUFMetaErrors: a value of another type or out of range is an error naming the
// file, the key, the type found and the type wanted.
func TestGGUFMetaErrors(t *testing.T) {
	path := metaFixture(t)
	gf, err := format.ParseGGUF(path)
	require.NoError(t, err)
	m := format.NewGGUFMeta(path, gf)
	for _, tc := range []struct {
		name string
		read func() error
		want string
	}{
		{"string", func() error { _, _, err := m.String("u32"); return err }, "metadata key u32 holds Uint32, want a string"},
		{"bool", func() error { _, _, err := m.Bool("s"); return err }, "metadata key s holds String, want a bool"},
		{"int64 of a float", func() error { _, _, err := m.Int64("f32"); return err }, "metadata key f32 holds Float32, want an integer"},
		{"int64 past MaxInt64", func() error { _, _, err := m.Int64("u64"); return err }, "metadata key u64 = 18446744073709551615 is out of range (want at most 9223372036854775807)"},
		{"int negative", func() error { _, _, err := m.Int("i32"); return err }, "metadata key i32 = -3 is out of range (want 0 to 2147483647)"},
		{"int past MaxInt32", func() error { _, _, err := m.Int("i64"); return err }, "metadata key i64 = 2147483648 is out of range"},
		{"float of a string", func() error { _, _, err := m.Float("s"); return err }, "metadata key s holds String, want a number"},
		{"array of a scalar", func() error { _, _, err := m.Strings("s"); return err }, "metadata key s holds String, want an array of string"},
		{"strings of int32", func() error { _, _, err := m.Strings("i32s"); return err }, "metadata key i32s holds an array of Int32, want an array of string"},
		{"float32s of strings", func() error { _, _, err := m.Float32s("strs"); return err }, "metadata key strs holds an array of String, want an array of float32"},
		{"int32s of float32", func() error { _, _, err := m.Int32s("f32s"); return err }, "metadata key f32s holds an array of Float32, want an array of int32"},
		{"array length of a scalar", func() error { _, _, err := m.ArrayLen("b"); return err }, "metadata key b holds Bool, want an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read()
			require.Error(t, err)
			require.ErrorContains(t, err, "gguf "+path+": ")
			require.ErrorContains(t, err, tc.want)
		})
	}

	// ParseGGUFMetadata skips large arrays: their length is there, their elements are not.
	light, err := format.ParseGGUFMetadata(path)
	require.NoError(t, err)
	lm := format.NewGGUFMeta(path, light)
	l, ok, err := lm.ArrayLen("strs")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 5, l)
	_, _, err = lm.Strings("strs")
	require.ErrorContains(t, err, "metadata key strs: the parser read 0 of its 5 elements")
}
