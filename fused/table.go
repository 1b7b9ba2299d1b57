package fused

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tpslice/tpslice/comm"
)

// TokenBucket returns the token bucket of a call of tokens rows: ⌈log2(tokens)⌉, so bucket
// b covers (2^(b-1), 2^b] tokens (comm.Bucket's rule on rows instead of bytes). A decode
// graph captured for a batch of 2^b sequences runs the variant of bucket b.
func TokenBucket(tokens int) int { return comm.Bucket(int64(tokens)) }

// Table is the fused selection table for one hidden size (Table.Hidden): per world size
// and token bucket, the variant Auto runs. It is keyed by tokens rather than bytes because
// that is what decides between the variants at a fixed row size (two-shot and sequence
// parallelism partition rows among the ranks, one-shot does not) and what the engine's
// decode graphs are bucketed by; Select ignores it for another hidden size. Its Pick takes
// the call's tokens.
type Table = comm.BucketTable[Variant]

// TableRow is a row of the fused selection table: at world size World, for calls whose
// token count falls in bucket Bucket (see TokenBucket), run Choice.
type TableRow = comm.BucketRow[Variant]

// Check reports why v cannot be a table's choice: Auto, or an unknown variant.
func (v Variant) Check() error {
	if !slices.Contains(Variants, v) {
		return fmt.Errorf("%v cannot be a table entry (want one of %v)", v, Variants)
	}
	return nil
}

// TokenBuckets is true: the fused table's buckets count tokens, rows of Table.Hidden.
func (Variant) TokenBuckets() bool { return true }

// variantField is a Variant in a table file's row.
type variantField struct {
	Variant string `json:"variant"`
}

// RowJSON writes the variant by name: {"variant": "oneshot"}.
func (v Variant) RowJSON() ([]byte, error) { return json.Marshal(variantField{v.String()}) }

// ParseRow reads the variant of a table file's row.
func (Variant) ParseRow(row []byte) (Variant, error) {
	var f variantField
	if err := json.Unmarshal(row, &f); err != nil {
		return 0, err
	}
	return ParseVariant(f.Variant)
}
