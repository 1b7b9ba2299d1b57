// Package engine owns the decode loop and is tpslice's public Go API: it loads a model and
// its tokenizer onto a TP group, schedules concurrent requests over a paged KV cache,
// chooses each token from the ranks' distributed candidates, stops on EOS or an
// end-of-turn token, the token limit, stop strings or the context length, and streams
// detokenized text. It reaches the model through the small Model interface it declares (a
// step, the sampled rows, decode graphs, what the model is), which *models.Llama
// implements for every architecture. With Config.Processes each rank runs in a worker
// process of its own (RankJob, started through package executor), and the driver's Model
// (procmodel.go) sends each step through the shared-memory step ring and reads the rows
// the workers send back; each worker replays its own decode graphs. A command above the
// engine watches a worker's rank through a RankProbe it gives the workers' job
// (NewRankJob) and starts and stops over the worker's control connection (ProbeRank):
// bench's kernel breakdown of rank 0.
//
// Data enters as a Request (prompt text and sampling parameters) and leaves as a stream of
// Tokens, whose text continues the prompt's (tokenizer.NewStreamAfter), and a Result with
// timings (Generate; GenerateBatch and GenerateEach for requests that arrive together). A
// token is chosen (Pick, pick.go) by a Gumbel-max draw with noise keyed by (seed, output
// position, token id), so it is the same at any TP degree and in any batch: every rank
// applies a sequence's logit adjustments (penalties, logit bias, min_tokens) to its own
// vocabulary shard and proposes its winner, or its best candidates for top-k and top-p
// (sample.go, layers.RowSampler), and Pick chooses among the gathered few; no step gathers
// the full logits to sample. Logprobs come from the ranks' shard log-sum-exp terms and top
// candidates (TokenLogprobs), never a gather of the full logits for them. A request's stop strings are one Aho-Corasick automaton
// (stopstrings.go), built on the caller's goroutine and shared by its choices, so the
// scheduler's goroutine spends at most two steps on each byte of output, whatever the
// strings.
//
// The scheduler (scheduler.go) is continuous batching as vLLM V1 does it. Every step has
// a token budget (Config.MaxBatchTokens): the decode token of every running sequence
// first, then chunks of the prompts still prefilling, then chunks of waiting requests,
// all in one forward pass of a mixed batch (step.go); while sequences decode, the prompt
// chunks of a step are bounded by a share of the prefill tokens pending
// (Config.PrefillSteps), so that a newcomer's prompt is spread over several steps instead
// of lengthening one, unless the prompts are a burst (Config.PrefillBurstRatio), which takes
// the whole budget so that its sequences decode in step; a step of decode tokens only replays
// the captured decode graph of its batch bucket (DecodeGraphReplays counts them), any
// other runs eagerly. A sequence holds
// the KV blocks of the tokens it has and takes one more as it crosses a block boundary
// (kvblocks.go); when the pool runs out, the most recently admitted sequences are
// preempted: their blocks are freed and they are requeued at the front, to prefill their
// prompt and the tokens generated so far again when they resume. Full blocks are cached
// under a hash chained over their tokens (automatic prefix caching, prefix.go): a request
// takes the longest cached prefix of its blocks, never its last token, instead of
// computing it (and waits, while a running sequence still computes blocks its prompt
// begins with, to share them: n choices of one prompt compute it once); blocks are shared
// by reference count, and free cached blocks are evicted least recently freed first. The kernels are batch-invariant, so a request's tokens are
// bitwise the same alone, in any batch, at any budget, after a preemption and with its
// prefix cached.
//
// The fused all-reduce + residual + RMSNorm variant of each token bucket comes, under
// Fused Auto, from a fused selection table when the Config gives one or a tune directory
// (fusedtune.go: autotuned on the group at start-up, cached per TP degree, fabric and
// hidden size); the tuner admits only variants that sum in rank order, so the table
// changes timings, never bits, and a decode graph fixes its bucket's variant at capture.
package engine
