// Package engine owns the decode loop and is tpslice's public Go API: it loads a model and
// its tokenizer onto a TP group, allocates KV cache blocks, runs prefill then one decode
// step per token, chooses each token from the ranks' distributed candidates, stops on EOS
// or an end-of-turn token, the token limit, stop strings or the context length, and
// streams detokenized text. It reaches the model through the small Model interface it
// declares (a step, the sampled rows, decode graphs, what the model is), which
// *models.Llama implements for every architecture.
//
// Data enters as a Request (prompt text and sampling parameters) and leaves as a stream of
// Tokens and a Result with timings (Generate; GenerateBatch for requests that arrive
// together). Scheduling of many concurrent requests (continuous batching) and decode
// graphs build on this loop.
package engine
