package layers

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/quant"
	"github.com/tpslice/tpslice/vec"
)

// Embedding looks up the rows of one shard of a vocab-parallel embedding table (Megatron's
// VocabParallelEmbedding): table holds rows [v0, v0+table.Rows) of a vocabulary of vocab
// ids, each table.Cols (hidden) wide, in f32, bf16, f16 or a quantized type. out is
// [len(ids), hidden] f32:
//
//	for t, id := range ids {
//		if v0 <= id < v0+table.Rows { out[t] = widen(table[id-v0]) } else { out[t] = 0 }
//	}
//
// with widen the exact dtype.ToF32, or quant.DequantizeRow's reference dequantization of a
// quantized row, so the sum over all shards (the all-reduce that follows) is the full
// embedding, bit for bit. An id outside [0, vocab) is an error naming
// it. It does not allocate.
func Embedding(out []float32, ids []int32, table Matrix, v0, vocab int) error {
	if err := table.Validate(); err != nil {
		return fmt.Errorf("layers: embedding: table %w", err)
	}
	if v0 < 0 || v0 > vocab-table.Rows {
		return fmt.Errorf("layers: embedding: shard rows [%d, %d) not within the vocabulary [0, %d)", v0, v0+table.Rows, vocab)
	}
	h := table.Cols
	if len(out) != len(ids)*h {
		return fmt.Errorf("layers: embedding: len(out)=%d, want tokens·hidden = %d·%d = %d", len(out), len(ids), h, len(ids)*h)
	}
	for t, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("layers: embedding: token %d has id %d, outside the vocabulary [0, %d)", t, id, vocab)
		}
	}
	for t, id := range ids {
		dst := out[t*h : (t+1)*h]
		r := int(id) - v0
		switch {
		case r < 0 || r >= table.Rows:
			clear(dst)
		case table.DType == dtype.F32:
			copy(dst, table.F32s()[r*h:(r+1)*h])
		case table.DType.Quantized():
			if err := quant.DequantizeRow(table.DType, dst, table.Data, table.Rows, r); err != nil {
				return fmt.Errorf("layers: embedding: token %d: %w", t, err)
			}
		default:
			vec.Widen(table.DType, dst, table.Bits()[r*h:(r+1)*h])
		}
	}
	return nil
}
