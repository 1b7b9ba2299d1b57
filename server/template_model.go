package server

import (
	"fmt"
	"os"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// ModelChatTemplate finds the template serve uses for model (LoadChatTemplate), and the
// text of its vocabulary's BOS and EOS, for tpslice chat-template --model: a model that is
// neither a file nor a built-in one is an error naming --model. The embedded model, presets
// and llama2.c checkpoints have no template (src ""), as do model files that ship none.
func ModelChatTemplate(model string) (src, origin, bos, eos string, err error) {
	if _, statErr := os.Stat(model); statErr != nil {
		if _, err := engine.LoadConfig(model); err != nil { // the built-in models, or the error naming them
			return "", "", "", "", fmt.Errorf("--model: %w", err)
		}
	}
	src, origin, err = LoadChatTemplate(model)
	if err != nil || src == "" {
		return "", "", "", "", err
	}
	tok, err := tokenizer.Load(model) // only GGUF files and HF directories carry templates
	if err != nil {
		return "", "", "", "", fmt.Errorf("the vocabulary of %s (for bos_token and eos_token): %w", model, err)
	}
	return src, origin, tok.Piece(tok.BOS()), tok.Piece(tok.EOS()), nil
}
