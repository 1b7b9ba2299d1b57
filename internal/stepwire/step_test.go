package stepwire_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// decodeStep is a decode step of batch sequences with blocks KV blocks each, as the engine
// sends one: a token per sequence (Seq nil: a table per token), greedy sampling.
func decodeStep(batch, blocks int) stepwire.Step {
	s := stepwire.Step{Number: 7, Bucket: batch, Forward: models.Step{Candidates: 1}}
	for i := range batch {
		s.Forward.IDs = append(s.Forward.IDs, int32(1000+i))
		s.Forward.Batch.Pos = append(s.Forward.Batch.Pos, int32(blocks*16-1))
		table := make([]int32, blocks)
		for j := range table {
			table[j] = int32(i*blocks + j)
		}
		s.Forward.Batch.Tables = append(s.Forward.Batch.Tables, table)
		s.Forward.Sample = append(s.Forward.Sample, i)
	}
	return s
}

// mixedStep is a step of every feature: a prefill chunk and decodes sharing tables through
// Seq, logprobs, samplers with every field and logit adjustments.
func mixedStep() stepwire.Step {
	return stepwire.Step{
		Number: 1 << 40,
		Forward: models.Step{
			IDs:        []int32{5, 6, 7, 8, 9},
			Batch:      layers.Batch{Pos: []int32{0, 1, 2, 40, 7}, Seq: []int32{0, 0, 0, 1, 2}, Tables: [][]int32{{3}, {4, 5, 6}, {9}}},
			Sample:     []int{2, 3, 4},
			Candidates: 4,
			Logprobs:   true,
			Samplers: []layers.RowSampler{
				{},
				{Temperature: 0.7, Draw: true, Seed: 1<<63 + 5, Pos: 12},
				{Temperature: 1, Terms: true, RepetitionPenalty: 1.1, Adjust: []layers.LogitAdjust{
					{ID: 3, Bias: -100}, {ID: 70000, Bias: 2.5, Repeat: true, Sub: 0.5}, {ID: 9, Mask: true}}},
			},
		},
	}
}

func encode(t testing.TB, s stepwire.Step) []byte {
	t.Helper()
	b, err := s.AppendBinary(nil)
	require.NoError(t, err)
	return b
}

func TestStepRoundTrip(t *testing.T) {
	for _, s := range []stepwire.Step{mixedStep(), decodeStep(16, 32), decodeStep(1, 1)} {
		b := encode(t, s)
		var got stepwire.Step
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, s, got)
	}
}

// TestDecodeStepBytes is the size of a typical decode step: batch 16 at 512 tokens of
// context (32 blocks of 16), greedy (no samplers), what shmring's BenchmarkStepRoundTrip sends.
func TestDecodeStepBytes(t *testing.T) {
	require.Equal(t, 2337, len(encode(t, decodeStep(16, 32))))
}

// TestStepTruncated cuts a step at every byte: each prefix is an error, none a panic.
func TestStepTruncated(t *testing.T) {
	b := encode(t, mixedStep())
	for n := range len(b) {
		var s stepwire.Step
		require.Error(t, s.UnmarshalBinary(b[:n]), "prefix of %d bytes", n)
	}
	var s stepwire.Step
	require.ErrorContains(t, s.UnmarshalBinary(b[:30]), "stepwire: step: tokens: 5 of at least 4 bytes each at offset 25, only 5 bytes left")
	require.ErrorContains(t, s.UnmarshalBinary(append(b, 0)), "1 bytes left over after the last field")
}

func TestStepRejects(t *testing.T) {
	good := encode(t, mixedStep())
	patch := func(off int, bs ...byte) []byte {
		b := append([]byte(nil), good...)
		copy(b[off:], bs)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"magic", patch(0, 'X'), `not a step: magic "XTP2"`},
		{"flags", patch(20, 0x80), "unknown flags 0x80"},
		{"huge count", patch(21, 0xff, 0xff, 0xff, 0x7f), "tokens: 2147483647 of at least 4 bytes each at offset 25"},
		{"sequence out of range", patch(25+2*4*5+4*4, 7), "token 4 belongs to sequence 7 of 3"},
	} {
		var s stepwire.Step
		require.ErrorContains(t, s.UnmarshalBinary(tc.b), tc.want, tc.name)
	}

	bad := mixedStep()
	bad.Forward.Samplers = bad.Forward.Samplers[:1]
	_, err := bad.AppendBinary(nil)
	require.ErrorContains(t, err, "samples 3 rows with 1 samplers")
	bad = mixedStep()
	bad.Forward.Sample[0] = 5
	_, err = bad.AppendBinary(nil)
	require.ErrorContains(t, err, "sampled row 0 is token 5 of 5")
	bad = mixedStep()
	bad.Forward.Batch.Pos = bad.Forward.Batch.Pos[:4]
	_, err = bad.AppendBinary(nil)
	require.ErrorContains(t, err, "has 5 ids and 4 positions")
	bad = decodeStep(2, 1)
	bad.Forward.Batch.Tables = bad.Forward.Batch.Tables[:1]
	_, err = bad.AppendBinary(nil)
	require.ErrorContains(t, err, "2 tokens with a table each, but 1 tables")
}

func TestReplyRoundTrip(t *testing.T) {
	for _, r := range []stepwire.Reply{{Number: 3, IDs: []int32{1, -2, 3}}, {Number: 5, Bucket: 4, Rows: []float32{1.5, -3, 7}},
		{Number: 4, Err: "rank 2: fused all-reduce: deadline"}} {
		b, err := r.AppendBinary(nil)
		require.NoError(t, err)
		var got stepwire.Reply
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, r, got)
		for n := range len(b) {
			require.Error(t, got.UnmarshalBinary(b[:n]), "prefix of %d bytes", n)
		}
	}
	var r stepwire.Reply
	require.ErrorContains(t, r.UnmarshalBinary([]byte("STP2")), `not a reply: magic "STP2", want "RPL2"`)
}

// FuzzStep decodes anything: what decodes must encode back to the same bytes (the format is
// canonical), and nothing panics or allocates past what the input can hold.
func FuzzStep(f *testing.F) {
	f.Add(encode(f, mixedStep()))
	f.Add(encode(f, decodeStep(4, 3)))
	r := rand.New(rand.NewPCG(1, 2))
	b := encode(f, mixedStep())
	for range 20 {
		c := append([]byte(nil), b...)
		c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s stepwire.Step
		if s.UnmarshalBinary(b) != nil {
			return
		}
		again, err := s.AppendBinary(nil)
		require.NoError(t, err)
		require.Equal(t, b, again)
	})
}

// FuzzReply does the same for replies.
func FuzzReply(f *testing.F) {
	b, _ := stepwire.Reply{Number: 9, IDs: []int32{4, 5}, Err: "x"}.AppendBinary(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r stepwire.Reply
		if r.UnmarshalBinary(b) != nil {
			return
		}
		again, err := r.AppendBinary(nil)
		require.NoError(t, err)
		require.Equal(t, b, again)
	})
}
