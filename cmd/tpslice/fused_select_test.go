package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGenerateFusedSelectTuned: --fused-select tuned autotunes the fused variants into
// --fused-tune-dir, reports the table's pick per call site and generates the tokens of
// the default selection.
func TestGenerateFusedSelectTuned(t *testing.T) {
	dir := t.TempDir()
	gen := func(extra ...string) generateReport {
		args := append([]string{"generate", "--model", "tiny", "--tp", "2", "--prompt", "Hello my name is", "--max-tokens", "8", "--temperature", "0", "--json"}, extra...)
		out, _, err := runCLI(t, args...)
		require.NoError(t, err)
		var rep generateReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		return rep
	}
	want := gen()
	got := gen("--fused-select", "tuned", "--fused-tune-dir", dir)
	require.Equal(t, want.OutputIDs, got.OutputIDs)
	files, err := filepath.Glob(filepath.Join(dir, "fused-tune-tp2-*-hidden64.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Contains(t, string(data), `"source": "tuned:`)
	require.Contains(t, got.Allreduce, "decode/mlp.down_proj")
}
