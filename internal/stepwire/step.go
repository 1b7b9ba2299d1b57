package stepwire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tpslice/tpslice/models"
)

// Step is one step as the driver broadcasts it to every rank.
type Step struct {
	// Number counts the steps since the engine started: a rank's Reply names it.
	Number uint64
	// Bucket is the batch size of the decode graph the ranks replay (0: run eagerly).
	Bucket int
	// Forward is the forward pass every rank runs.
	Forward models.Step
	// Sampling holds the sampling parameters of each row of Forward.Sample, in its order.
	Sampling []Sampling
}

// Sampling is one sampled row's parameters: engine.Sampling's fields, the logit biases
// sorted by token, and Draw, which draw of Seed's generator the row's next token is (the
// tokens it generated so far).
type Sampling struct {
	Temperature, TopP, RepetitionPenalty, FrequencyPenalty, PresencePenalty float32
	TopK, MinTokens                                                         int
	Seed                                                                    uint64
	Draw                                                                    int
	LogitBias                                                               []Bias
}

// Bias is one logit bias: Value added to the logit of token ID.
type Bias struct {
	ID    int32
	Value float32
}

const (
	stepMagic    = "STP1"
	flagLogprobs = 1
	flagSeq      = 2
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
	case len(s.Sampling) != len(f.Sample):
		return nil, fmt.Errorf("stepwire: step %d samples %d rows with %d sets of sampling parameters", s.Number, len(f.Sample), len(s.Sampling))
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
	for i, sp := range s.Sampling {
		if sp.TopK < 0 || sp.MinTokens < 0 || sp.Draw < 0 || sp.TopK > math.MaxUint32 || sp.MinTokens > math.MaxUint32 || sp.Draw > math.MaxUint32 {
			return nil, fmt.Errorf("stepwire: step %d, sampled row %d: top_k %d, min_tokens %d or draw %d out of range", s.Number, i, sp.TopK, sp.MinTokens, sp.Draw)
		}
		b = appendF32(b, sp.Temperature, sp.TopP, sp.RepetitionPenalty, sp.FrequencyPenalty, sp.PresencePenalty)
		b = appendU32(b, sp.TopK, sp.MinTokens, sp.Draw)
		b = binary.LittleEndian.AppendUint64(b, sp.Seed)
		b = appendU32(b, len(sp.LogitBias))
		for _, bias := range sp.LogitBias {
			b = appendF32(binary.LittleEndian.AppendUint32(b, uint32(bias.ID)), bias.Value)
		}
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
	if r.err == nil && flags&^(flagLogprobs|flagSeq) != 0 {
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
	sampled := r.count("sampled rows", 4+sampleRowBytes)
	if sampled > 0 {
		st.Forward.Sample, st.Sampling = make([]int, sampled), make([]Sampling, sampled)
	}
	for i := range sampled {
		st.Forward.Sample[i] = r.int("sampled row")
	}
	for i := range sampled {
		sp := &st.Sampling[i]
		sp.Temperature, sp.TopP, sp.RepetitionPenalty = r.f32("temperature"), r.f32("top_p"), r.f32("repetition_penalty")
		sp.FrequencyPenalty, sp.PresencePenalty = r.f32("frequency_penalty"), r.f32("presence_penalty")
		sp.TopK, sp.MinTokens, sp.Draw = r.int("top_k"), r.int("min_tokens"), r.int("draw")
		sp.Seed = r.u64("seed")
		biases := r.count(fmt.Sprintf("row %d's logit biases", i), 8)
		if biases > 0 {
			sp.LogitBias = make([]Bias, biases)
		}
		for j := range biases {
			sp.LogitBias[j] = Bias{ID: int32(r.u32("bias token")), Value: r.f32("bias value")}
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

// sampleRowBytes is the least a sampled row's parameters take: the fixed fields and the
// count of its biases.
const sampleRowBytes = 5*4 + 3*4 + 8 + 4

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
