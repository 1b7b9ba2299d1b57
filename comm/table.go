package comm

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// MaxBucket is the largest size bucket: it covers (2^62, 2^63-1] bytes.
const MaxBucket = 63

// Bucket returns the size bucket of a message: ⌈log2(bytes)⌉, so bucket b covers
// (2^(b-1), 2^b] bytes. Messages of at most 1 byte (including empty ones, and negative
// sizes, which no caller should pass) fall in bucket 0.
func Bucket(bytes int64) int {
	if bytes <= 1 {
		return 0
	}
	return bits.Len64(uint64(bytes - 1))
}

// BucketBytes returns the largest message size in bucket b, 2^b bytes; it is where the
// model evaluates the bucket. Buckets below 0 give 1; MaxBucket gives math.MaxInt64.
func BucketBytes(b int) int64 {
	switch {
	case b <= 0:
		return 1
	case b >= MaxBucket:
		return math.MaxInt64
	}
	return int64(1) << b
}

// Entry is what the rows of a BucketTable choose: comm's Choice of an all-reduce algorithm
// and protocol, fused's Variant. E is the entry type itself, so that ParseRow can return
// one.
type Entry[E any] interface {
	// Check reports why the value cannot be a table's choice (Auto, an unknown value).
	Check() error
	// TokenBuckets reports whether the table's buckets count tokens, rows of
	// BucketTable.Hidden values (fused's), rather than bytes (comm's).
	TokenBuckets() bool
	// RowJSON is the value as the fields of a table file's row, a JSON object beside the
	// row's world and bucket: {"algo": "ring", "proto": "LL"}.
	RowJSON() ([]byte, error)
	// ParseRow reads the value from a table file's row (a JSON object; the row's other
	// fields are ignored). It is called on the zero value.
	ParseRow(row []byte) (E, error)
}

// BucketRow is one entry of a selection table: at world size World, for calls whose size
// falls in bucket Bucket (see Bucket), run Choice.
type BucketRow[E Entry[E]] struct {
	// World is the number of ranks, ≥ 1.
	World int
	// Bucket is the size bucket, 0 to MaxBucket; it covers (2^(Bucket-1), 2^Bucket] bytes
	// or tokens.
	Bucket int
	// Choice is what runs; never Auto.
	Choice E
	// MicrosPerCall is what the autotuner measured of each candidate, by name: its best µs
	// per call (one call's, for a candidate pruned after it). Informational; absent in a
	// hand-made or modelled table.
	MicrosPerCall map[string]float64
}

// BucketTable is a selection table: per world size and size bucket, what an Auto call
// runs. comm's all-reduce Table is keyed by message bytes; fused's by tokens, for one
// hidden size. Rows are sorted by (World, Bucket) with no duplicates; Set, SaveTable and
// LoadTable keep them so, and Validate checks it. Pick is safe for concurrent use as long
// as nothing calls Set at the same time. A table tuned on a node is cached on disk by
// LoadOrTune.
type BucketTable[E Entry[E]] struct {
	// Source says where the choices come from: "model:<profile>" for the cost model of a
	// hardware profile, "tuned:<fingerprint>" for measurements on a running backend.
	Source string `json:"source"`
	// Hosts is the number of hosts the choices were made for; 0 means one. A communicator
	// consults only a table of its own node's hosts: choices priced inside one host know
	// nothing of the slower fabric between hosts.
	Hosts int `json:"hosts,omitempty"`
	// Hidden is the row length, in elements, the choices of a table of token buckets were
	// made for (≥ 1; fused's Select ignores the table for any other); 0 in a table of
	// bytes.
	Hidden int `json:"hidden,omitempty"`
	// Rows are the choices, sorted by (World, Bucket).
	Rows []BucketRow[E] `json:"rows"`
}

// Table is the all-reduce selection table: which algorithm and protocol to run for a
// world size and a message-size bucket.
type Table = BucketTable[Choice]

// TableRow is a row of the all-reduce selection table.
type TableRow = BucketRow[Choice]

type bucketKey struct{ world, bucket int }

func (r BucketRow[E]) key() bucketKey { return bucketKey{r.World, r.Bucket} }

func compareKey(a, b bucketKey) int {
	return cmp.Or(cmp.Compare(a.world, b.world), cmp.Compare(a.bucket, b.bucket))
}

// search finds the row of world n and bucket b in the sorted rows: its index, or where
// it would go.
func (t *BucketTable[E]) search(n, b int) (int, bool) {
	return slices.BinarySearchFunc(t.Rows, bucketKey{n, b}, func(r BucketRow[E], k bucketKey) int { return compareKey(r.key(), k) })
}

// Pick returns the choice for a call of size bytes (tokens, in a table of token buckets)
// over n ranks. It uses the row of the call's bucket; where the table has no such row it
// uses the nearest larger bucket of that world size, and above the largest bucket the
// largest one. ok is false when the table has no row for world size n.
func (t *BucketTable[E]) Pick(n int, size int64) (choice E, ok bool) {
	if t == nil {
		return choice, false
	}
	i, found := t.search(n, Bucket(size))
	switch {
	case found:
	case i < len(t.Rows) && t.Rows[i].World == n: // nearest larger bucket
	case i > 0 && t.Rows[i-1].World == n: // above the largest bucket
		i--
	default:
		return choice, false
	}
	return t.Rows[i].Choice, true
}

// Set records row, replacing any row of the same world and bucket, keeping the rows
// sorted. It is how an autotuner fills a table from measurements. A row that could not be
// a table's leaves the table as it was.
func (t *BucketTable[E]) Set(row BucketRow[E]) error {
	if err := row.check(); err != nil {
		return fmt.Errorf("comm: table %q: set: %w", t.Source, err)
	}
	if i, found := t.search(row.World, row.Bucket); found {
		t.Rows[i] = row
	} else {
		t.Rows = slices.Insert(t.Rows, i, row)
	}
	return nil
}

// Worlds returns the world sizes the table has rows for, in increasing order.
func (t *BucketTable[E]) Worlds() []int {
	var ws []int
	for _, r := range t.Rows {
		if len(ws) == 0 || ws[len(ws)-1] != r.World {
			ws = append(ws, r.World)
		}
	}
	return ws
}

// Covers reports whether the table has a row for world n in every bucket from lo to hi.
func (t *BucketTable[E]) Covers(n, lo, hi int) bool {
	for b := lo; b <= hi; b++ {
		if _, found := t.search(n, b); !found {
			return false
		}
	}
	return true
}

// Validate reports the first thing wrong with the table, naming the row: no rows, a table
// of token buckets without its hidden size, a world size below 1, a bucket outside
// 0..MaxBucket, a choice that is not a table's (Auto, an unknown value), rows out of
// (World, Bucket) order, or a duplicate row.
func (t *BucketTable[E]) Validate() error {
	var zero E
	switch {
	case t == nil:
		return errors.New("comm: nil table")
	case zero.TokenBuckets() && t.Hidden < 1:
		return fmt.Errorf("comm: table %q: hidden size %d, want ≥ 1", t.Source, t.Hidden)
	case len(t.Rows) == 0:
		return fmt.Errorf("comm: table %q has no rows", t.Source)
	}
	for i, r := range t.Rows {
		if err := r.check(); err != nil {
			return fmt.Errorf("comm: table %q: row %d: %w", t.Source, i, err)
		}
	}
	for i := 1; i < len(t.Rows); i++ {
		prev, k := t.Rows[i-1].key(), t.Rows[i].key()
		switch c := compareKey(prev, k); {
		case c == 0:
			return fmt.Errorf("comm: table %q: row %d: duplicate of row %d (world %d, bucket %d)", t.Source, i, i-1, k.world, k.bucket)
		case c > 0:
			return fmt.Errorf("comm: table %q: row %d (world %d, bucket %d) is out of order after (world %d, bucket %d)", t.Source, i, k.world, k.bucket, prev.world, prev.bucket)
		}
	}
	return nil
}

// check reports what is wrong with the row on its own, naming its world and bucket.
func (r BucketRow[E]) check() error {
	bucket := "bucket"
	if r.Choice.TokenBuckets() {
		bucket = "token bucket"
	}
	switch {
	case r.World < 1:
		return fmt.Errorf("world size %d, want ≥ 1", r.World)
	case r.Bucket < 0 || r.Bucket > MaxBucket:
		return fmt.Errorf("world %d: %s %d, want 0 to %d", r.World, bucket, r.Bucket, MaxBucket)
	}
	if err := r.Choice.Check(); err != nil {
		return fmt.Errorf("world %d, %s %d: %w", r.World, bucket, r.Bucket, err)
	}
	return nil
}

// sortRows sorts the rows by key, keeping the order of duplicates so that Validate
// reports them.
func (t *BucketTable[E]) sortRows() {
	slices.SortStableFunc(t.Rows, func(a, b BucketRow[E]) int { return compareKey(a.key(), b.key()) })
}
