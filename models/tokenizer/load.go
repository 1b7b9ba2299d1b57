package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load loads a tokenizer from a GGUF file, a tokenizer.json, or a directory holding a
// tokenizer.json, telling them apart by content (GGUF files start with "GGUF").
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
	return nil, fmt.Errorf("tokenizer: %s: neither a GGUF file nor a tokenizer.json", path)
}
