package decode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/engine"
)

// TestRunRefusesBadOptions: prompts or generations too short to measure are refused
// before a model loads (the model named does not exist).
func TestRunRefusesBadOptions(t *testing.T) {
	ok := Options{Config: engine.Config{Model: "no-such-model"}, TPs: []int{1}, Batches: []int{1}, PromptLen: 1, GenLen: MinGenLen}
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.PromptLen = 0 }, "--prompt-len must be at least 1, got 0"},
		{func(o *Options) { o.GenLen = 2 }, "--gen-len must be at least 8"},
		{func(o *Options) { o.Batches = nil }, "no TP degree or batch size to run"},
		{func(*Options) {}, "--model no-such-model"},
	} {
		o := ok
		tc.edit(&o)
		_, err := Run(context.Background(), o)
		require.ErrorContains(t, err, tc.want)
	}
}
