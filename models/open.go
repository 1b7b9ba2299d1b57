package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tpslice/tpslice/models/format"
)

// Open opens a checkpoint by its path and returns its weights and config: a .gguf file
// (OpenGGUF), a llama2.c .bin checkpoint (OpenLlama2C), or a Hugging Face directory,
// *.safetensors file or model.safetensors.index.json (OpenSafetensors, with ConfigFromHF
// reading the config.json beside the weights). Any other file is refused with what it is
// not, rather than blamed for a config.json it never had.
func Open(path string) (*format.FileSource, Config, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".gguf":
		return OpenGGUF(path)
	case ".bin":
		return OpenLlama2C(path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, Config{}, fmt.Errorf("models: open %s: %w", path, err)
	}
	dir := path
	if !st.IsDir() {
		if !strings.HasSuffix(path, ".safetensors") && !strings.HasSuffix(path, ".json") {
			return nil, Config{}, fmt.Errorf("models: open %s: not a checkpoint: want a .gguf file, a llama2.c .bin, a .safetensors file or index, or a Hugging Face directory", path)
		}
		dir = filepath.Dir(path)
	}
	cfg, err := ConfigFromHF(dir)
	if err != nil {
		return nil, Config{}, err
	}
	src, err := format.OpenSafetensors(path, CanonicalName)
	if err != nil {
		return nil, Config{}, err
	}
	return src, cfg, nil
}
