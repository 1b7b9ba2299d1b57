package engine

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/stories260k"
)

// TestUnknownModel: a model name that is no file and no built-in model is an error that
// says so in one grammatical phrase and lists every built-in model, the default
// stories260K first, wherever a model is named (New, LoadConfig, LoadTokenizer).
func TestUnknownModel(t *testing.T) {
	for name, load := range map[string]func(string) error{
		"New":           func(m string) error { _, err := New(Config{Model: m, TP: 1}); return err },
		"LoadConfig":    func(m string) error { _, err := LoadConfig(m); return err },
		"LoadTokenizer": func(m string) error { _, err := LoadTokenizer(m); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := load("gpt-9")
			require.ErrorContains(t, err, `model "gpt-9" is not a file, a directory or a built-in model (`+stories260k.Name+", the default, and the presets tiny, demo,")
			require.ErrorIs(t, err, fs.ErrNotExist)
		})
	}
}
