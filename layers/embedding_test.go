package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestEmbeddingShardsSumToFull splits a table into vocab shards and checks that each shard
// gives its own rows and zeros elsewhere, so that the sum of the shards is the full lookup.
func TestEmbeddingShardsSumToFull(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	const vocab, hidden = 103, 24
	ids := []int32{0, 102, 50, 51, 25, 26, 77, 0, 101}
	for _, dt := range dtypes {
		for _, shards := range []int{1, 2, 4, 7} {
			t.Run(fmt.Sprintf("%v/%d shards", dt, shards), func(t *testing.T) {
				full := randMatrix(r, dt, vocab, hidden)
				sum := make([]float32, len(ids)*hidden)
				for s := range shards {
					v0, v1 := s*vocab/shards, (s+1)*vocab/shards
					row := full.RowBytes()
					shard := Matrix{DType: dt, Rows: v1 - v0, Cols: hidden, Data: full.Data[v0*row : v1*row]}
					out := make([]float32, len(ids)*hidden)
					for i := range out {
						out[i] = 99 // must be overwritten, zeros included
					}
					require.NoError(t, Embedding(out, ids, shard, v0, vocab))
					for tok, id := range ids {
						for c := range hidden {
							want := float32(0)
							if int(id) >= v0 && int(id) < v1 {
								want = refWeight(full, int(id), c)
							}
							require.Equal(t, want, out[tok*hidden+c], "token %d id %d col %d", tok, id, c)
						}
					}
					for i := range sum {
						sum[i] += out[i]
					}
				}
				for tok, id := range ids {
					for c := range hidden {
						require.Equal(t, refWeight(full, int(id), c), sum[tok*hidden+c])
					}
				}
			})
		}
	}
}

func TestEmbeddingErrors(t *testing.T) {
	shard := F32Matrix(10, 4, make([]float32, 40))
	for _, tc := range []struct {
		name      string
		out       int
		ids       []int32
		table     Matrix
		v0, vocab int
		want      string
	}{
		{"id too large", 8, []int32{3, 100}, shard, 10, 100, "token 1 has id 100, outside the vocabulary [0, 100)"},
		{"negative id", 4, []int32{-2}, shard, 10, 100, "token 0 has id -2"},
		{"shard outside", 4, []int32{0}, shard, 95, 100, "shard rows [95, 105) not within the vocabulary [0, 100)"},
		{"negative v0", 4, []int32{0}, shard, -1, 100, "shard rows [-1, 9)"},
		{"out", 5, []int32{0}, shard, 0, 100, "len(out)=5, want tokens·hidden = 1·4 = 4"},
		{"table", 4, []int32{0}, F32Matrix(10, 4, nil), 0, 100, "f32 matrix [10, 4] needs 160 bytes, has 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, Embedding(make([]float32, tc.out), tc.ids, tc.table, tc.v0, tc.vocab), tc.want)
		})
	}
}

func TestEmbeddingDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	table := randMatrix(r, dtype.BF16, 64, 128)
	ids := []int32{70, 80, 90, 100}
	out := make([]float32, len(ids)*128)
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = Embedding(out, ids, table, 64, 200) }))
}
