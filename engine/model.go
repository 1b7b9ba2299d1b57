package engine

import (
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/tp"
)

// Model is what the engine needs of a decoder sharded over a TP group: run a step, read
// the sampled tokens' candidates or logits, capture the decode step as graphs, and say what
// it is. *models.Llama (every architecture of the Llama family) is one; the server and the
// command line reach the model only through it.
type Model interface {
	// Config is the model's shape and architecture; Options how it was built.
	Config() models.Config
	Options() models.LlamaOptions
	// Group is the TP group the model runs on; nil where the ranks run in worker
	// processes (Config.Processes), whose groups are theirs.
	Group() *tp.Group
	// Forward runs one step on every rank and waits for it.
	Forward(models.Step) error
	// Candidates returns each sampled token's candidates from every rank (Step.Candidates
	// > 0); Logits the sampled tokens' full logits (Step.Candidates = 0).
	Candidates(models.Step) [][]layers.Candidate
	Logits(models.Step) [][]float32
	// SamplerTerms returns every rank's normaliser terms of each sampled token's adjusted
	// logits (Step.Samplers, in rank order).
	SamplerTerms(models.Step) [][]float32
	// LogSumExp returns each sampled token's log Σ exp(logit) over the vocabulary
	// (Step.Logprobs), combined from every rank's shard terms.
	LogSumExp(models.Step) []float64
	// CaptureDecode captures the decode step of a batch of b sequences, proposing k
	// candidates per rank (0: the full logits).
	CaptureDecode(b, k int) (*models.DecodeGraph, error)
	// WeightBytes is the weight memory of each rank; LoadNotes says where loading changed
	// what the file holds: a file type converted for the kernels, or a TP split that cut
	// the blocks of a quantized type.
	WeightBytes() []int64
	LoadNotes() []string
	// Close frees the model's device memory.
	Close()
}

var _ Model = (*models.Llama)(nil)
