package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGenerateQuantized: a Q4_K_M file generates at TP 4, and where the split cuts its
// blocks the shard notes say so once each, on stderr; the same tokens come out at TP 1. A
// preset quantizes on load (--dtype q8_0), and a block type whose blocks do not tile the
// rows is refused with the sizes.
func TestGenerateQuantized(t *testing.T) {
	path := tokenizerTestdata(t, "quant", "tiny-Q4_K_M.gguf")
	ids := map[string][]int32{}
	for _, tp := range []string{"1", "4"} {
		out, errOut, err := runCLI(t, "generate", "--model", path, "--tp", tp, "--prompt", "Once upon a time", "--max-tokens", "8", "--temperature", "0", "--json")
		require.NoError(t, err, errOut)
		var rep generateReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.Len(t, rep.OutputIDs, 8)
		ids[tp] = rep.OutputIDs
		if tp == "4" {
			require.Equal(t, 1, strings.Count(errOut, "blk.*.attn_output.weight: q4_k shards of 64 columns cut its 256-value blocks"), errOut)
		} else {
			require.NotContains(t, errOut, "shards of")
		}
	}
	require.Equal(t, ids["1"], ids["4"])

	out, errOut, err := runCLI(t, "generate", "--model", "tiny", "--dtype", "q8_0", "--max-tokens", "4", "--json")
	require.NoError(t, err, errOut)
	var rep generateReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.OutputIDs, 4)

	_, _, err = runCLI(t, "generate", "--model", "tiny", "--dtype", "q4_k", "--max-tokens", "4")
	require.ErrorContains(t, err, "weight dtype q4_k needs rows of whole 256-value blocks, but the hidden size is 64")
	_, _, err = runCLI(t, "generate", "--model", "tiny", "--dtype", "q3_k", "--max-tokens", "4")
	require.ErrorContains(t, err, `unknown dtype "q3_k"`)
}
