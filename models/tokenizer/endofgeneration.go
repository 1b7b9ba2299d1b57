package tokenizer

import "slices"

// endOfGenerationTexts are the vocabulary entries llama.cpp ends a generation on besides
// EOS (llama_vocab_is_eog: special_eog_ids, which llama-vocab.cpp finds by text): the
// end-of-turn tokens of chat templates (<|eot_id|> Llama 3, <|im_end|> Qwen, <|end|> Phi,
// <end_of_turn> Gemma, …) and the FIM pad, repo and file-separator tokens, which llama.cpp
// adds to the set as well.
var endOfGenerationTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	// FIM pad, repo and file separator
	"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
	"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
}

// ggufEndOfGenerationKeys are the GGUF metadata keys whose token ids llama.cpp also ends a
// generation on.
var ggufEndOfGenerationKeys = []string{
	"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
	"tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
}

// endOfGeneration is the sorted set of ids that end a generation: EOS, the ids a loader
// found (GGUF's eot/eom/fim keys), and every entry whose text is in endOfGenerationTexts.
func endOfGeneration(tokens []string, eos int, found []int) []int {
	texts := make(map[string]bool, len(endOfGenerationTexts))
	for _, t := range endOfGenerationTexts {
		texts[t] = true
	}
	var ids []int
	if eos >= 0 {
		ids = append(ids, eos)
	}
	ids = append(ids, found...)
	for id, t := range tokens {
		if texts[t] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// EndOfGeneration returns the ids that end a generation, as llama.cpp's
// llama_vocab_is_eog: EOS, the end-of-turn tokens of chat templates (<|eot_id|>,
// <|im_end|>, …), the FIM pad/repo/separator tokens, and the ids a GGUF file names under
// tokenizer.ggml.eot_token_id and its siblings. Sorted; a copy.
func (t *Tokenizer) EndOfGeneration() []int { return slices.Clone(t.eog) }
