package fused

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"

	"github.com/tpslice/tpslice/comm"
)

// TokenBucket returns the token bucket of a call of tokens rows: ⌈log2(tokens)⌉, so bucket
// b covers (2^(b-1), 2^b] tokens (comm.Bucket's rule on rows instead of bytes). A decode
// graph captured for a batch of 2^b sequences runs the variant of bucket b.
func TokenBucket(tokens int) int { return comm.Bucket(int64(tokens)) }

// TableRow is one entry of a fused selection table: at world size World, for calls whose
// token count falls in bucket Bucket (see TokenBucket), run Variant.
type TableRow struct {
	World, Bucket int
	Variant       Variant
	// MicrosPerCall is what the autotuner measured of each variant that ran correctly, by
	// name (informational; absent in a hand-made table).
	MicrosPerCall map[string]float64
}

// Table is the fused selection table for one hidden size: per world size and token
// bucket, the variant Auto runs. It is keyed by tokens rather than bytes because that is
// what decides between the variants at a fixed row size (two-shot and sequence parallelism
// partition rows among the ranks, one-shot does not) and what the engine's decode graphs
// are bucketed by; the hidden size it was made for is part of the table, and Select
// ignores it for any other. Rows are sorted by (World, Bucket) without duplicates.
type Table struct {
	// Source says where the choices come from: "tuned:<fingerprint>" for measurements.
	Source string
	// Hidden is the row length, in f32 elements, the choices were made for.
	Hidden int
	Rows   []TableRow
}

// Key is the row's place in its table (comm.Keyed).
func (r TableRow) Key() comm.BucketKey { return comm.BucketKey{World: r.World, Bucket: r.Bucket} }

// Pick returns the variant for a call of tokens rows over n ranks: the row of the call's
// bucket, else the nearest larger bucket of world n, else (above the largest) the largest.
// ok is false when the table has no row for world n.
func (t *Table) Pick(n, tokens int) (v Variant, ok bool) {
	if t == nil {
		return 0, false
	}
	r, ok := comm.PickRow(t.Rows, n, TokenBucket(tokens))
	return r.Variant, ok
}

// Set records row, replacing any row of the same world and bucket, keeping rows sorted.
func (t *Table) Set(row TableRow) error {
	if err := checkRow(row); err != nil {
		return fmt.Errorf("fused: table %q: set: %w", t.Source, err)
	}
	t.Rows = comm.SetRow(t.Rows, row)
	return nil
}

// Validate reports the first thing wrong with the table, naming the row: no rows, a hidden
// size below 1, a world size below 1, a bucket outside 0..comm.MaxBucket, Auto or an
// unknown variant, rows out of order or duplicated.
func (t *Table) Validate() error {
	switch {
	case t == nil:
		return errors.New("fused: nil table")
	case t.Hidden < 1:
		return fmt.Errorf("fused: table %q: hidden size %d, want ≥ 1", t.Source, t.Hidden)
	case len(t.Rows) == 0:
		return fmt.Errorf("fused: table %q has no rows", t.Source)
	}
	for i, r := range t.Rows {
		if err := checkRow(r); err != nil {
			return fmt.Errorf("fused: table %q: row %d: %w", t.Source, i, err)
		}
	}
	if err := comm.RowOrderError(t.Rows); err != nil {
		return fmt.Errorf("fused: table %q: %w", t.Source, err)
	}
	return nil
}

func checkRow(r TableRow) error {
	switch {
	case r.World < 1:
		return fmt.Errorf("world size %d, want ≥ 1", r.World)
	case r.Bucket < 0 || r.Bucket > comm.MaxBucket:
		return fmt.Errorf("world %d: token bucket %d, want 0 to %d", r.World, r.Bucket, comm.MaxBucket)
	case !slices.Contains(Variants, r.Variant):
		return fmt.Errorf("world %d, token bucket %d: %v cannot be a table entry (want one of %v)", r.World, r.Bucket, r.Variant, Variants)
	}
	return nil
}

// fileRow is a row as the cache file spells it: the variant by name.
type fileRow struct {
	World         int                `json:"world"`
	Bucket        int                `json:"bucket"`
	Variant       string             `json:"variant"`
	MicrosPerCall map[string]float64 `json:"us,omitempty"`
}

type fileTable struct {
	Source string    `json:"source"`
	Hidden int       `json:"hidden"`
	Rows   []fileRow `json:"rows"`
}

// SaveTable writes a valid table to path as indented JSON, atomically (a temporary file
// renamed over path), creating directories as needed.
func SaveTable(path string, t *Table) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("fused: save table %s: %w", path, err)
	}
	f := fileTable{Source: t.Source, Hidden: t.Hidden}
	for _, r := range t.Rows {
		f.Rows = append(f.Rows, fileRow{World: r.World, Bucket: r.Bucket, Variant: r.Variant.String(), MicrosPerCall: r.MicrosPerCall})
	}
	data, err := json.MarshalIndent(&f, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		err = renameio.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("fused: save table %s: %w", path, err)
	}
	return nil
}

// LoadTable reads a table SaveTable wrote. Errors name the file and what was wrong:
// unreadable, bad JSON, a row with an unknown variant, or a table that does not validate.
func LoadTable(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fused: load table: %w", err)
	}
	var f fileTable
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("fused: load table %s: bad JSON: %w", path, err)
	}
	t := &Table{Source: f.Source, Hidden: f.Hidden}
	for i, r := range f.Rows {
		v, err := ParseVariant(r.Variant)
		if err != nil {
			return nil, fmt.Errorf("fused: load table %s: row %d (world %d, bucket %d): %w", path, i, r.World, r.Bucket, err)
		}
		t.Rows = append(t.Rows, TableRow{World: r.World, Bucket: r.Bucket, Variant: v, MicrosPerCall: r.MicrosPerCall})
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("fused: load table %s: %w", path, err)
	}
	return t, nil
}
