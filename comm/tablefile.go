package comm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/renameio/v2"
)

// rowKey and rowMicros are a table file row's fields besides its choice's.
type rowKey struct {
	World  int `json:"world"`
	Bucket int `json:"bucket"`
}

type rowMicros struct {
	MicrosPerCall map[string]float64 `json:"us,omitempty"`
}

// MarshalJSON writes the row as one object: world, bucket, the choice's fields
// (Entry.RowJSON), then what was measured.
func (r BucketRow[E]) MarshalJSON() ([]byte, error) {
	key, err := json.Marshal(rowKey{r.World, r.Bucket})
	if err != nil {
		return nil, err
	}
	choice, err := r.Choice.RowJSON()
	if err != nil {
		return nil, err
	}
	micros, err := json.Marshal(rowMicros{r.MicrosPerCall})
	if err != nil {
		return nil, err
	}
	return joinObjects(key, choice, micros)
}

// joinObjects concatenates the fields of JSON objects into one object.
func joinObjects(objs ...[]byte) ([]byte, error) {
	var fields [][]byte
	for _, o := range objs {
		o = bytes.TrimSpace(o)
		if len(o) < 2 || o[0] != '{' || o[len(o)-1] != '}' {
			return nil, fmt.Errorf("comm: table row: %q is not a JSON object", o)
		}
		if f := bytes.TrimSpace(o[1 : len(o)-1]); len(f) > 0 {
			fields = append(fields, f)
		}
	}
	return slices.Concat([]byte("{"), bytes.Join(fields, []byte(",")), []byte("}")), nil
}

// UnmarshalJSON reads a row MarshalJSON wrote.
func (r *BucketRow[E]) UnmarshalJSON(data []byte) error {
	var key rowKey
	var micros rowMicros
	if err := json.Unmarshal(data, &key); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &micros); err != nil {
		return err
	}
	var zero E
	choice, err := zero.ParseRow(data)
	if err != nil {
		return err
	}
	*r = BucketRow[E]{World: key.World, Bucket: key.Bucket, Choice: choice, MicrosPerCall: micros.MicrosPerCall}
	return nil
}

// SaveTable writes t to path as indented JSON, atomically: it writes a temporary file in
// the same directory (creating directories as needed) and renames it over path. Rows are
// written sorted; a table that does not validate is not written.
func SaveTable[E Entry[E]](path string, t *BucketTable[E]) error {
	if t == nil {
		return fmt.Errorf("comm: save table %s: nil table", path)
	}
	out := *t
	out.Rows = slices.Clone(t.Rows)
	out.sortRows()
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

// LoadTable reads a table that SaveTable wrote (rows may be in any order; they are
// sorted). Errors name the file and what was wrong: unreadable file, bad JSON, a row whose
// choice cannot be read (comm's: an unknown or missing algorithm name, an unknown
// protocol; fused's: an unknown variant), naming the row, or a table that does not
// validate. A comm row without a protocol (every row of a table written before protocols
// were a choice) means Simple.
func LoadTable[E Entry[E]](path string) (*BucketTable[E], error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("comm: load table: %w", err)
	}
	// Rows are decoded one by one so that errors can name the row.
	var raw struct {
		Source string            `json:"source"`
		Hosts  int               `json:"hosts"`
		Hidden int               `json:"hidden"`
		Rows   []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("comm: load table %s: bad JSON: %w", path, err)
	}
	if len(raw.Rows) == 0 {
		return nil, fmt.Errorf("comm: load table %s: no rows", path)
	}
	t := &BucketTable[E]{Source: raw.Source, Hosts: raw.Hosts, Hidden: raw.Hidden, Rows: make([]BucketRow[E], len(raw.Rows))}
	for i, row := range raw.Rows {
		var key rowKey // first, so that an error in the rest of the row can name it
		if err := json.Unmarshal(row, &key); err != nil {
			return nil, fmt.Errorf("comm: load table %s: row %d: bad JSON: %w", path, i, err)
		}
		if err := t.Rows[i].UnmarshalJSON(row); err != nil {
			return nil, fmt.Errorf("comm: load table %s: row %d (world %d, bucket %d): %w", path, i, key.World, key.Bucket, err)
		}
	}
	t.sortRows()
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("comm: load table %s: %w", path, err)
	}
	return t, nil
}
