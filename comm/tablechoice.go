package comm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Check reports why c cannot be a table's choice: Auto or an unknown algorithm, an
// unknown protocol, or a protocol for an algorithm that takes none.
func (c Choice) Check() error {
	switch {
	case !slices.Contains(Algos, c.Algo) && !slices.Contains(HostAlgos, c.Algo):
		return fmt.Errorf("algorithm %v cannot be a table entry (want one of %v or %v)", c.Algo, Algos, HostAlgos)
	case c.Proto > Simple:
		return fmt.Errorf("unknown protocol %v", c.Proto)
	case c.Proto != ProtoAuto && !TakesProto(c.Algo):
		return fmt.Errorf("protocol %v given for %v, which takes none (only %s do)", c.Proto, c.Algo, protoAlgoNames())
	}
	return nil
}

// TokenBuckets is false: the all-reduce table's buckets count message bytes.
func (Choice) TokenBuckets() bool { return false }

// choiceFields are a Choice's fields in a table file's row; a row without a protocol (as
// in tables written before protocols were a choice) means Simple.
type choiceFields struct {
	Algo  string `json:"algo"`
	Proto string `json:"proto,omitempty"`
}

// RowJSON writes the algorithm and the protocol by name: {"algo": "ring", "proto": "LL"},
// without "proto" for ProtoAuto.
func (c Choice) RowJSON() ([]byte, error) {
	f := choiceFields{Algo: c.Algo.String()}
	if c.Proto != ProtoAuto {
		f.Proto = c.Proto.String()
	}
	return json.Marshal(f)
}

// ParseRow reads the algorithm and the protocol of a table file's row.
func (Choice) ParseRow(row []byte) (Choice, error) {
	var f choiceFields
	if err := json.Unmarshal(row, &f); err != nil {
		return Choice{}, err
	}
	if f.Algo == "" {
		return Choice{}, errors.New("missing algo")
	}
	a, err := ParseAlgo(f.Algo)
	if err != nil {
		return Choice{}, err
	}
	var p Proto
	if f.Proto != "" {
		if p, err = ParseProto(f.Proto); err != nil {
			return Choice{}, err
		}
	}
	return Choice{Algo: a, Proto: p}, nil
}
