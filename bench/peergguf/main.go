package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models"
)

func main() {
	model := flag.String("model", "medium", "preset to write (models.Presets)")
	dt := flag.String("dtype", "f16", "storage type of the matrices")
	seed := flag.Uint64("seed", 0, "seed of the preset's dummy weights (tpslice's --seed)")
	out := flag.String("o", "", "GGUF file to write")
	flag.Parse()
	if err := write(*model, *dt, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "peergguf:", err)
		os.Exit(1)
	}
}

func write(model, dt string, seed uint64, out string) error {
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
	return models.ExportGGUF(out, cfg, src, t, meta...)
}
