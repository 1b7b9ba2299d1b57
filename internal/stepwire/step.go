package stepwire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// Step is one step as the driver broadcasts it to every rank.
type Step struct {
	// Number counts the steps since the engine started: a rank's Reply names it.
	Number uint64
	// Bucket is the batch size of the decode graph the ranks replay (0: run eagerly).
	Bucket int
	// Forward is the forward pass every rank runs, with its samplers (each sampled row's
	// logit adjustments and draw, which every rank applies to its own vocabulary shard).
	Forward models.Step
}

const (
	stepMagic    = "STP2"
	flagLogprobs = 1
	flagSeq      = 2
	flagSamplers = 4

	samplerDraw  = 1
	samplerTerms = 2
	adjustMask   = 1
	adjustRepeat = 2
)

// AppendBinary appends s in the wire format to b (encoding.BinaryAppender). It refuses a
// step whose parts disagree: the decoder would refuse it.
func (s Step) AppendBinary(b []byte) ([]byte, error) {
	f := s.Forward
	n := len(f.IDs)
	switch {
	case len(f.Batch.Pos) != n:
		return nil, fmt.Errorf("stepwire: step %d has %d ids and %d positions", s.Number, n, len(f.Batch.Pos))
	case f.Batch.Seq != nil && len(f.Batch.Seq) != n:
		return nil, fmt.Errorf("stepwire: step %d has %d ids and %d sequence indices", s.Number, n, len(f.Batch.Seq))
	case f.Samplers != nil && len(f.Samplers) != len(f.Sample):
		return nil, fmt.Errorf("stepwire: step %d samples %d rows with %d samplers", s.Number, len(f.Sample), len(f.Samplers))
	case s.Bucket < 0 || s.Bucket > math.MaxUint32 || f.Candidates < 0 || f.Candidates > math.MaxUint32:
		return nil, fmt.Errorf("stepwire: step %d: bucket %d or candidates %d out of range", s.Number, s.Bucket, f.Candidates)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	flags := byte(0)
	if f.Logprobs {
		flags |= flagLogprobs
	}
	if f.Batch.Seq != nil {
		flags |= flagSeq
	}
	if f.Samplers != nil {
		flags |= flagSamplers
	}
	b = append(b, stepMagic...)
	b = binary.LittleEndian.AppendUint64(b, s.Number)
	b = appendU32(b, s.Bucket, f.Candidates)
	b = append(b, flags)
	b = appendI32s(appendU32(b, n), f.IDs)
	b = appendI32s(b, f.Batch.Pos)
	b = appendI32s(b, f.Batch.Seq)
	b = appendU32(b, len(f.Batch.Tables))
	for _, t := range f.Batch.Tables {
		b = appendI32s(appendU32(b, len(t)), t)
	}
	b = appendU32(b, len(f.Sample))
	b = appendU32(b, f.Sample...)
	for _, sp := range f.Samplers {
		b = appendSampler(b, sp)
	}
	return b, nil
}

// UnmarshalBinary reads a step AppendBinary wrote. It checks the format (every count
// against the bytes left, nothing left over) and that the step is consistent: every
// sequence index names a table, every sampled row a token.
func (s *Step) UnmarshalBinary(b []byte) error {
	r := reader{b: b}
	if magic := string(r.bytes("magic", 4)); r.err == nil && magic != stepMagic {
		return fmt.Errorf("stepwire: not a step: magic %q, want %q", magic, stepMagic)
	}
	var st Step
	st.Number = r.u64("number")
	st.Bucket, st.Forward.Candidates = r.int("bucket"), r.int("candidates")
	flags := r.u8("flags")
	if r.err == nil && flags&^(flagLogprobs|flagSeq|flagSamplers) != 0 {
		return fmt.Errorf("stepwire: step %d: unknown flags %#x", st.Number, flags)
	}
	st.Forward.Logprobs = flags&flagLogprobs != 0
	n := r.count("tokens", 4)
	st.Forward.IDs, st.Forward.Batch.Pos = r.i32s("ids", n), r.i32s("positions", n)
	if flags&flagSeq != 0 {
		st.Forward.Batch.Seq = r.i32s("sequence indices", n)
		if st.Forward.Batch.Seq == nil && r.err == nil {
			st.Forward.Batch.Seq = []int32{}
		}
	}
	tables := r.count("tables", 4)
	if tables > 0 {
		st.Forward.Batch.Tables = make([][]int32, tables)
	}
	for i := range tables {
		st.Forward.Batch.Tables[i] = r.i32s(fmt.Sprintf("table %d", i), r.count(fmt.Sprintf("table %d's blocks", i), 4))
	}
	rowBytes := 4
	if flags&flagSamplers != 0 {
		rowBytes += samplerBytes
	}
	sampled := r.count("sampled rows", rowBytes)
	if sampled > 0 {
		st.Forward.Sample = make([]int, sampled)
	}
	for i := range sampled {
		st.Forward.Sample[i] = r.int("sampled row")
	}
	if flags&flagSamplers != 0 {
		st.Forward.Samplers = make([]layers.RowSampler, sampled)
		for i := range sampled {
			st.Forward.Samplers[i] = r.sampler(i)
		}
	}
	if err := r.done(); err != nil {
		return fmt.Errorf("stepwire: step: %w", err)
	}
	if err := st.check(); err != nil {
		return err
	}
	*s = st
	return nil
}

// check names the first index that points outside the step.
func (s Step) check() error {
	f := s.Forward
	if f.Batch.Seq == nil && len(f.Batch.Tables) != len(f.IDs) {
		return fmt.Errorf("stepwire: step %d: %d tokens with a table each, but %d tables", s.Number, len(f.IDs), len(f.Batch.Tables))
	}
	for t, q := range f.Batch.Seq {
		if q < 0 || int(q) >= len(f.Batch.Tables) {
			return fmt.Errorf("stepwire: step %d: token %d belongs to sequence %d of %d", s.Number, t, q, len(f.Batch.Tables))
		}
	}
	for i, t := range f.Sample {
		if t < 0 || t >= len(f.IDs) {
			return fmt.Errorf("stepwire: step %d: sampled row %d is token %d of %d", s.Number, i, t, len(f.IDs))
		}
	}
	return nil
}
