package comm

import (
	"cmp"
	"fmt"
	"slices"
)

// BucketKey locates a row of a bucketed selection table: a world size and a size bucket.
// comm's Table (buckets of bytes) and fused's (buckets of tokens) keep their rows sorted
// by it without duplicates, and share the lookups below.
type BucketKey struct{ World, Bucket int }

// Keyed is a table row that knows its key.
type Keyed interface{ Key() BucketKey }

func compareKey(a, b BucketKey) int {
	return cmp.Or(cmp.Compare(a.World, b.World), cmp.Compare(a.Bucket, b.Bucket))
}

func searchRows[R Keyed](rows []R, k BucketKey) (int, bool) {
	return slices.BinarySearchFunc(rows, k, func(r R, k BucketKey) int { return compareKey(r.Key(), k) })
}

// PickRow returns the row for world n and bucket b of sorted rows: the bucket's own row,
// else the nearest larger bucket of world n, else (above the largest) its largest. ok is
// false when no row has world n.
func PickRow[R Keyed](rows []R, n, b int) (r R, ok bool) {
	i, found := searchRows(rows, BucketKey{n, b})
	switch {
	case found:
	case i < len(rows) && rows[i].Key().World == n: // nearest larger bucket
	case i > 0 && rows[i-1].Key().World == n: // above the largest bucket
		i--
	default:
		return r, false
	}
	return rows[i], true
}

// SetRow returns sorted rows with row in its place, replacing a row of the same key.
func SetRow[R Keyed](rows []R, row R) []R {
	i, found := searchRows(rows, row.Key())
	if found {
		rows[i] = row
		return rows
	}
	return slices.Insert(rows, i, row)
}

// CoversRows reports whether rows have a row for world n in every bucket from lo to hi.
func CoversRows[R Keyed](rows []R, n, lo, hi int) bool {
	for b := lo; b <= hi; b++ {
		if _, found := searchRows(rows, BucketKey{n, b}); !found {
			return false
		}
	}
	return true
}

// sortRows sorts rows by key, keeping the order of duplicates so that RowOrderError
// reports them.
func sortRows[R Keyed](rows []R) {
	slices.SortStableFunc(rows, func(a, b R) int { return compareKey(a.Key(), b.Key()) })
}

// RowOrderError reports the first row that duplicates or follows out of order the row
// before it, naming both; nil when rows are sorted without duplicates.
func RowOrderError[R Keyed](rows []R) error {
	for i := 1; i < len(rows); i++ {
		prev, k := rows[i-1].Key(), rows[i].Key()
		switch c := compareKey(prev, k); {
		case c == 0:
			return fmt.Errorf("row %d: duplicate of row %d (world %d, bucket %d)", i, i-1, k.World, k.Bucket)
		case c > 0:
			return fmt.Errorf("row %d (world %d, bucket %d) is out of order after (world %d, bucket %d)", i, k.World, k.Bucket, prev.World, prev.Bucket)
		}
	}
	return nil
}
