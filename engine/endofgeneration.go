package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/models/tokenizer"
)

// endOfGenerationTexts are the vocabulary entries llama.cpp ends a generation on besides
// EOS (llama_vocab_is_eog: special_eog_ids, which llama-vocab.cpp finds by text): the
// end-of-turn tokens of chat templates (<|eot_id|> Llama 3, <|im_end|> Qwen, <|end|> Phi,
// <end_of_turn> Gemma, …) and the FIM pad, repo and file-separator tokens, which
// llama.cpp adds to the set as well.
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

// endOfGeneration is the set of token ids that end a generation: EOS, the vocabulary's
// entries in endOfGenerationTexts, and extra (ids a model file names: GGUF keys,
// generation_config.json's eos_token_id). Ids outside the vocabulary are left out.
func endOfGeneration(tok *tokenizer.Tokenizer, extra []int) map[int32]bool {
	set := map[int32]bool{}
	add := func(id int) {
		if id >= 0 && id < tok.VocabSize() {
			set[int32(id)] = true
		}
	}
	add(tok.EOS())
	for _, id := range extra {
		add(id)
	}
	texts := map[string]bool{}
	for _, t := range endOfGenerationTexts {
		texts[t] = true
	}
	for id := range tok.VocabSize() {
		if texts[tok.Piece(id)] {
			add(id)
		}
	}
	return set
}

// ggufEndOfGenerationIDs reads the token ids of ggufEndOfGenerationKeys from a GGUF
// header (parsed from path).
func ggufEndOfGenerationIDs(path string, gf *gguf.GGUFFile) (ids []int, err error) {
	defer func() { // gguf-parser-go panics on some malformed values
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("%s: malformed GGUF metadata: %v", path, r)
		}
	}()
	for _, key := range ggufEndOfGenerationKeys {
		kv, ok := gf.Header.MetadataKV.Get(key)
		if !ok {
			continue
		}
		switch kv.ValueType {
		case gguf.GGUFMetadataValueTypeUint32:
			ids = append(ids, int(kv.ValueUint32()))
		case gguf.GGUFMetadataValueTypeInt32:
			ids = append(ids, int(kv.ValueInt32()))
		default:
			return nil, fmt.Errorf("%s: %s is a %v, not a token id", path, key, kv.ValueType)
		}
	}
	return ids, nil
}

func generationConfigEOS(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cfg.EOS) == 0 || string(cfg.EOS) == "null" {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(cfg.EOS, &one); err == nil {
		return []int{one}, nil
	}
	var list []int
	if err := json.Unmarshal(cfg.EOS, &list); err != nil {
		return nil, fmt.Errorf("%s: eos_token_id must be a token id or a list of them, got %s", path, cfg.EOS)
	}
	return list, nil
}
