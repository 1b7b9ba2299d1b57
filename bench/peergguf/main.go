package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/tokenizer"
)

func main() {
	model := flag.String("model", "medium", "preset to write (models.Presets)")
	dt := flag.String("dtype", "f16", "storage type of the matrices")
	seed := flag.Uint64("seed", 0, "seed of the preset's dummy weights (tpslice's --seed)")
	out := flag.String("o", "", "GGUF file to write")
	printable := flag.Bool("printable-bytes", false, "write the byte tokens as normal ones whose text is their <0xNN> piece, so that every output is valid UTF-8 (llama-server ends a stream that is not)")
	flag.Parse()
	if err := write(*model, *dt, *seed, *out, *printable); err != nil {
		fmt.Fprintln(os.Stderr, "peergguf:", err)
		os.Exit(1)
	}
}

func write(model, dt string, seed uint64, out string, printableBytes bool) error {
	if out == "" {
		return fmt.Errorf("-o: name the GGUF file to write")
	}
	t, err := dtype.Parse(dt)
	if err != nil {
		return fmt.Errorf("--dtype: %w", err)
	}
	cfg, err := models.Preset(model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	src, err := models.NewDummy(cfg, seed)
	if err != nil {
		return err
	}
	tok, err := engine.LoadTokenizer(model)
	if err != nil {
		return err
	}
	meta, err := tok.GGUFMetadata()
	if err != nil {
		return err
	}
	if printableBytes {
		if err := bytesAsText(meta); err != nil {
			return err
		}
	}
	return models.ExportGGUF(out, cfg, src, t, meta...)
}

// bytesAsText retypes the byte tokens of meta's vocabulary as normal tokens: their pieces
// ("<0x80>") are then printed as they are instead of as one raw byte each. Ids, scores and
// the model's outputs stay the same; only the text of a byte token changes.
func bytesAsText(meta []format.GGUFKV) error {
	for _, kv := range meta {
		if kv.Key != "tokenizer.ggml.token_type" {
			continue
		}
		types, ok := kv.Value.([]int32)
		if !ok {
			return fmt.Errorf("--printable-bytes: %s is %T, want []int32", kv.Key, kv.Value)
		}
		for i, typ := range types {
			if typ == int32(tokenizer.TypeByte) {
				types[i] = int32(tokenizer.TypeNormal)
			}
		}
		return nil
	}
	return fmt.Errorf("--printable-bytes: the vocabulary has no tokenizer.ggml.token_type")
}
