package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tpslice/tpslice/models/tokenizer"
)

// endOfGeneration is the set of token ids that end a generation: the tokenizer's (EOS, the
// end-of-turn tokens, what a GGUF file names) and extra (generation_config.json's
// eos_token_id, which vLLM stops on). Ids outside the vocabulary are left out.
func endOfGeneration(tok *tokenizer.Tokenizer, extra []int) map[int32]bool {
	set := map[int32]bool{}
	for _, id := range append(tok.EndOfGeneration(), extra...) {
		if id >= 0 && id < tok.VocabSize() {
			set[int32(id)] = true
		}
	}
	return set
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
