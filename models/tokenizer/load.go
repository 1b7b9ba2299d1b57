package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load loads a tokenizer from a GGUF file, a tokenizer.json, a directory holding a
// tokenizer.json, or a llama2.c tokenizer file. GGUF files are told by content (they start
// with "GGUF"), tokenizer.json by content ("{") or name (".json"); llama2.c files have no
// magic, so a file that is neither and whose name ends in ".bin" is read as one.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if st.IsDir() {
		return FromHFTokenizerJSON(filepath.Join(path, "tokenizer.json"))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	magic := make([]byte, 4)
	n, _ := f.Read(magic)
	f.Close()
	if n == 4 && string(magic) == "GGUF" {
		return FromGGUF(path)
	}
	if strings.HasPrefix(strings.TrimSpace(string(magic[:n])), "{") || strings.HasSuffix(path, ".json") {
		return FromHFTokenizerJSON(path)
	}
	if strings.HasSuffix(path, ".bin") {
		return FromLlama2C(path)
	}
	return nil, fmt.Errorf("tokenizer: %s: neither a GGUF file nor a tokenizer.json (and not named *.bin, as Load wants a llama2.c tokenizer to be)", path)
}
