package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenerateJSON(t *testing.T) {
	out, _, err := runCLI(t, "generate", "--model", "tiny", "--tp", "4", "--prompt", "Hello my name is", "--max-tokens", "8", "--temperature", "0", "--json")
	require.NoError(t, err)
	var rep generateReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "tiny", rep.Model)
	require.Equal(t, 4, rep.TP)
	require.Equal(t, int32(1), rep.PromptIDs[0], "BOS first")
	require.Len(t, rep.OutputIDs, 8)
	require.Equal(t, "length", rep.FinishReason)
	require.Positive(t, rep.TTFTMs)
	require.Contains(t, rep.Allreduce, "decode/mlp.down_proj")

	again, _, err := runCLI(t, "generate", "--model", "tiny", "--tp", "1", "--prompt", "Hello my name is", "--max-tokens", "8", "--temperature", "0", "--json")
	require.NoError(t, err)
	var rep1 generateReport
	require.NoError(t, json.Unmarshal([]byte(again), &rep1))
	require.Equal(t, rep.OutputIDs, rep1.OutputIDs, "TP 4 and TP 1 generate the same greedy tokens")

	text, _, err := runCLI(t, "generate", "--model", "tiny", "--tp", "2", "--max-tokens", "4", "--seed", "3")
	require.NoError(t, err)
	require.Contains(t, text, "# tiny at TP=2: prompt")
}

// TestGenerateKVDType: generate runs with a 16-bit KV cache.
func TestGenerateKVDType(t *testing.T) {
	for _, kv := range []string{"bf16", "f16"} {
		out, _, err := runCLI(t, "generate", "--model", "tiny", "--tp", "2", "--kv-dtype", kv, "--max-tokens", "4",
			"--temperature", "0", "--json")
		require.NoError(t, err, kv)
		require.Contains(t, out, `"output_ids"`, kv)
	}
}

func TestGenerateBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--model", "gpt-9"}, `model "gpt-9" is neither a file or directory`},
		{[]string{"--model", "tiny", "--tp", "3"}, "cannot shard over 3 ranks: 8 attention heads do not split evenly"},
		{[]string{"--temperature", "-1"}, "temperature must be ≥ 0"},
		{[]string{"--top-p", "1.5"}, "top_p must be in [0, 1], got 1.5"},
		{[]string{"--max-tokens", "0"}, "--max-tokens must be at least 1"},
		{[]string{"--dtype", "int4"}, `--dtype: unknown dtype "int4"`},
		{[]string{"--kv-dtype", "fp8"}, `invalid value "fp8" for flag -kv-dtype: unknown dtype "fp8"`},
		{[]string{"--fused", "magic"}, `--fused: unknown fused all-reduce variant "magic"`},
		{[]string{"stray"}, `unexpected argument "stray"`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"generate"}, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestMembw(t *testing.T) {
	out, _, err := runCLI(t, "membw", "--mib", "16", "--rounds", "2", "--json")
	require.NoError(t, err)
	var rep membwReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Positive(t, rep.ReadGBps)
	_, _, err = runCLI(t, "membw", "--threads", "0")
	require.ErrorContains(t, err, "must be at least 1")
}
