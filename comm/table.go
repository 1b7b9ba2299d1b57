package comm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"
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

// TableRow is one entry of a selection table: for world size World and messages in size
// bucket Bucket (see Bucket), run Algo with protocol Proto.
type TableRow struct {
	// World is the number of ranks, ≥ 1.
	World int `json:"world"`
	// Bucket is the size bucket, 0 to MaxBucket; it covers (2^(Bucket-1), 2^Bucket] bytes.
	Bucket int `json:"bucket"`
	// Algo is the algorithm to run; never Auto. It marshals as its name.
	Algo Algo `json:"algo"`
	// Proto is the protocol Algo runs with, for ring and tree only; ProtoAuto (absent from
	// the JSON, as in tables written before protocols were a choice) means Simple.
	Proto Proto `json:"proto,omitempty"`
}

// Table is the all-reduce selection table: which algorithm to run for a world size and a
// message-size bucket. Rows are sorted by (World, Bucket) with no duplicates; Set,
// SaveTable and LoadTable (and perf.ModelTable) keep them so, and Validate checks it. Pick is safe for
// concurrent use as long as nothing calls Set at the same time.
type Table struct {
	// Source says where the choices come from: "model:<profile>" for the cost model of a
	// hardware profile, "tuned:<fingerprint>" for measurements on a running backend.
	Source string `json:"source"`
	// Hosts is the number of hosts the choices were made for; 0 means one. A communicator
	// consults only a table of its own node's hosts: choices priced inside one host know
	// nothing of the slower fabric between hosts.
	Hosts int `json:"hosts,omitempty"`
	// Rows are the choices, sorted by (World, Bucket).
	Rows []TableRow `json:"rows"`
}

// Key is the row's place in its table (Keyed).
func (r TableRow) Key() BucketKey { return BucketKey{r.World, r.Bucket} }

// Pick returns the algorithm for an all-reduce of bytes per rank over n ranks. It uses the
// row of the message's bucket; where the table has no such row it uses the nearest larger
// bucket of that world size, and above the largest bucket the largest one. ok is false
// when the table has no row for world size n.
func (t *Table) Pick(n int, bytes int64) (algo Algo, ok bool) {
	ch, ok := t.PickChoice(n, bytes)
	return ch.Algo, ok
}

// PickChoice is Pick with the row's protocol.
func (t *Table) PickChoice(n int, bytes int64) (Choice, bool) {
	if t == nil {
		return Choice{}, false
	}
	r, ok := PickRow(t.Rows, n, Bucket(bytes))
	return Choice{r.Algo, r.Proto}, ok
}

// Set records algo for world size n and size bucket, replacing any row already there and
// keeping the rows sorted. It is how an autotuner fills a table from measurements.
func (t *Table) Set(n, bucket int, algo Algo) error {
	return t.SetChoice(n, bucket, Choice{Algo: algo})
}

// SetChoice is Set with a protocol (ProtoAuto for none).
func (t *Table) SetChoice(n, bucket int, ch Choice) error {
	row := TableRow{World: n, Bucket: bucket, Algo: ch.Algo, Proto: ch.Proto}
	if err := checkRow(row); err != nil {
		return fmt.Errorf("comm: table %q: set: %w", t.Source, err)
	}
	t.Rows = SetRow(t.Rows, row)
	return nil
}

// Worlds returns the world sizes the table has rows for, in increasing order.
func (t *Table) Worlds() []int {
	var ws []int
	for _, r := range t.Rows {
		if len(ws) == 0 || ws[len(ws)-1] != r.World {
			ws = append(ws, r.World)
		}
	}
	return ws
}

// Validate reports the first thing wrong with the table, naming the row: no rows, a world
// size below 1, a bucket outside 0..MaxBucket, Auto or an unknown algorithm, rows out of
// (World, Bucket) order, or a duplicate row.
func (t *Table) Validate() error {
	if t == nil {
		return errors.New("comm: nil table")
	}
	if len(t.Rows) == 0 {
		return fmt.Errorf("comm: table %q has no rows", t.Source)
	}
	for i, r := range t.Rows {
		if err := checkRow(r); err != nil {
			return fmt.Errorf("comm: table %q: row %d: %w", t.Source, i, err)
		}
	}
	if err := RowOrderError(t.Rows); err != nil {
		return fmt.Errorf("comm: table %q: %w", t.Source, err)
	}
	return nil
}

func checkRow(r TableRow) error {
	switch {
	case r.World < 1:
		return fmt.Errorf("world size %d, want ≥ 1", r.World)
	case r.Bucket < 0 || r.Bucket > MaxBucket:
		return fmt.Errorf("world %d: bucket %d, want 0 to %d", r.World, r.Bucket, MaxBucket)
	case !slices.Contains(Algos, r.Algo) && !slices.Contains(HostAlgos, r.Algo):
		return fmt.Errorf("world %d, bucket %d: algorithm %v cannot be a table entry (want one of %v or %v)", r.World, r.Bucket, r.Algo, Algos, HostAlgos)
	case r.Proto > Simple:
		return fmt.Errorf("world %d, bucket %d: unknown protocol %v", r.World, r.Bucket, r.Proto)
	case r.Proto != ProtoAuto && !TakesProto(r.Algo):
		return fmt.Errorf("world %d, bucket %d: protocol %v given for %v, which takes none (only %s do)", r.World, r.Bucket, r.Proto, r.Algo, protoAlgoNames())
	}
	return nil
}

// SaveTable writes t to path as indented JSON, atomically: it writes a temporary file in
// the same directory (creating directories as needed) and renames it over path. Rows are
// written sorted; a table that does not validate is not written.
func SaveTable(path string, t *Table) error {
	if t == nil {
		return fmt.Errorf("comm: save table %s: nil table", path)
	}
	out := Table{Source: t.Source, Hosts: t.Hosts, Rows: slices.Clone(t.Rows)}
	sortRows(out.Rows)
	if err := out.Validate(); err != nil {
		return fmt.Errorf("comm: save table %s: %w", path, err)
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("comm: save table %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("comm: save table %s: %w", path, err)
	}
	// renameio writes a temporary file beside path and renames it over path, so a reader
	// never sees half a table and a crash leaves the old one.
	if err := renameio.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("comm: save table %s: %w", path, err)
	}
	return nil
}

// LoadTable reads a table that SaveTable wrote (rows may be in any order; they are sorted).
// Errors name the file and what was wrong: unreadable file, bad JSON, a row with an unknown
// or missing algorithm name, an unknown protocol or one for an algorithm that takes none,
// no rows, bad world sizes or buckets, duplicate rows. A row without a protocol (every row
// of a table written before protocols were a choice) means Simple.
func LoadTable(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("comm: load table: %w", err)
	}
	// Algorithms are decoded as strings here so that errors can name the row.
	var raw struct {
		Source string `json:"source"`
		Hosts  int    `json:"hosts"`
		Rows   []struct {
			World  int    `json:"world"`
			Bucket int    `json:"bucket"`
			Algo   string `json:"algo"`
			Proto  string `json:"proto"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("comm: load table %s: bad JSON: %w", path, err)
	}
	if len(raw.Rows) == 0 {
		return nil, fmt.Errorf("comm: load table %s: no rows", path)
	}
	t := &Table{Source: raw.Source, Hosts: raw.Hosts, Rows: make([]TableRow, len(raw.Rows))}
	for i, r := range raw.Rows {
		if r.Algo == "" {
			return nil, fmt.Errorf("comm: load table %s: row %d (world %d, bucket %d): missing algo", path, i, r.World, r.Bucket)
		}
		a, err := ParseAlgo(r.Algo)
		if err != nil {
			return nil, fmt.Errorf("comm: load table %s: row %d (world %d, bucket %d): %w", path, i, r.World, r.Bucket, err)
		}
		var p Proto
		if r.Proto != "" { // absent in tables written before protocols were a choice
			if p, err = ParseProto(r.Proto); err != nil {
				return nil, fmt.Errorf("comm: load table %s: row %d (world %d, bucket %d): %w", path, i, r.World, r.Bucket, err)
			}
		}
		t.Rows[i] = TableRow{World: r.World, Bucket: r.Bucket, Algo: a, Proto: p}
	}
	sortRows(t.Rows)
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("comm: load table %s: %w", path, err)
	}
	return t, nil
}
