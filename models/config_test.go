package models_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
)

func validConfig() models.Config {
	return models.Config{
		Name: "t", Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		Vocab: 100, RopeTheta: 10000, RMSEps: 1e-5, ContextLength: 128, RopeLayout: models.RopeHalfSplit,
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, validConfig().Validate())
	for _, tc := range []struct {
		field string
		edit  func(*models.Config)
	}{
		{"Hidden", func(c *models.Config) { c.Hidden = 0 }},
		{"Intermediate", func(c *models.Config) { c.Intermediate = -1 }},
		{"Layers", func(c *models.Config) { c.Layers = 0 }},
		{"Heads", func(c *models.Config) { c.Heads = 0 }},
		{"KVHeads", func(c *models.Config) { c.KVHeads = 0 }},
		{"KVHeads", func(c *models.Config) { c.KVHeads = 3 }}, // does not divide 4
		{"HeadDim", func(c *models.Config) { c.HeadDim = 0 }},
		{"HeadDim", func(c *models.Config) { c.HeadDim = 15 }},
		{"Vocab", func(c *models.Config) { c.Vocab = 0 }},
		{"ContextLength", func(c *models.Config) { c.ContextLength = 0 }},
		{"RopeTheta", func(c *models.Config) { c.RopeTheta = 0 }},
		{"RopeTheta", func(c *models.Config) { c.RopeTheta = math.NaN() }},
		{"RopeTheta", func(c *models.Config) { c.RopeTheta = math.Inf(1) }},
		{"RMSEps", func(c *models.Config) { c.RMSEps = -1e-5 }},
		{"RopeLayout", func(c *models.Config) { c.RopeLayout = 0 }},
		{"RopeLayout", func(c *models.Config) { c.RopeLayout = 9 }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.field)
			require.Contains(t, err.Error(), `"t"`)
		})
	}
	// Every bad field is reported, not only the first.
	err := models.Config{Name: "zero"}.Validate()
	require.Error(t, err)
	for _, f := range []string{"Hidden", "Intermediate", "Layers", "Heads", "KVHeads", "HeadDim", "Vocab", "ContextLength", "RopeTheta", "RMSEps", "RopeLayout"} {
		require.Contains(t, err.Error(), f)
	}
}

func TestConfigTensorsAndParams(t *testing.T) {
	c := validConfig()
	ts := c.Tensors(dtype.BF16)
	require.Len(t, ts, 3+9*c.Layers)
	shapes := map[string][]int{}
	var n int64
	for _, ti := range ts {
		require.Equal(t, dtype.BF16, ti.DType)
		shapes[ti.Name] = ti.Shape
		n += int64(ti.Elements())
	}
	require.Equal(t, n, c.ParamCount())
	require.Equal(t, 2*n, c.WeightBytes(dtype.BF16))
	require.Equal(t, 4*n, c.WeightBytes(dtype.F32))
	for name, want := range map[string][]int{
		models.TokenEmbd:           {100, 64},
		"blk.1.attn_norm.weight":   {64},
		"blk.1.attn_q.weight":      {64, 64},
		"blk.1.attn_k.weight":      {32, 64},
		"blk.1.attn_v.weight":      {32, 64},
		"blk.1.attn_output.weight": {64, 64},
		"blk.0.ffn_norm.weight":    {64},
		"blk.0.ffn_gate.weight":    {96, 64},
		"blk.0.ffn_up.weight":      {96, 64},
		"blk.0.ffn_down.weight":    {64, 96},
		models.OutputNorm:          {64},
		models.Output:              {100, 64},
	} {
		require.Equal(t, want, shapes[name], name)
	}
	c.TiedEmbeddings = true
	require.Len(t, c.Tensors(dtype.F32), 2+9*c.Layers)
	require.Equal(t, n-100*64, c.ParamCount())
}

func TestPresets(t *testing.T) {
	names := models.Presets()
	require.Equal(t, []string{"tiny", "demo", "medium", "llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b"}, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c, err := models.Preset(name)
			require.NoError(t, err)
			require.Equal(t, name, c.Name)
			require.NoError(t, c.Validate())
			upper, err := models.Preset(strings.ToUpper(name))
			require.NoError(t, err)
			require.Equal(t, c, upper)
		})
	}
	_, err := models.Preset("llama-4")
	require.Error(t, err)
	for _, name := range names {
		require.Contains(t, err.Error(), name)
	}
	require.Contains(t, err.Error(), "llama-4")
}

func TestPresetShapes(t *testing.T) {
	for _, tc := range []struct {
		name                                  string
		hidden, ffn, layers, heads, kv, vocab int
		theta                                 float64
		ctx                                   int
		params                                int64 // exact where published
		minParams, maxParams                  int64
	}{
		{"tiny", 64, 192, 2, 8, 4, 512, 10000, 256, 0, 1, 1e6},
		{"demo", 512, 1536, 4, 8, 8, 4096, 10000, 1024, 0, 1, 30e6},
		{"medium", 2048, 5632, 8, 16, 8, 16384, 10000, 2048, 0, 380e6, 420e6},
		{"llama-2-7b", 4096, 11008, 32, 32, 32, 32000, 10000, 4096, 6_738_415_616, 0, 0},
		{"llama-2-70b", 8192, 28672, 80, 64, 8, 32000, 10000, 4096, 68_976_648_192, 0, 0},
		{"llama-3-8b", 4096, 14336, 32, 32, 8, 128256, 500000, 8192, 8_030_261_248, 0, 0},
		{"llama-3-70b", 8192, 28672, 80, 64, 8, 128256, 500000, 8192, 70_553_706_496, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := models.Preset(tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.hidden, c.Hidden)
			require.Equal(t, tc.ffn, c.Intermediate)
			require.Equal(t, tc.layers, c.Layers)
			require.Equal(t, tc.heads, c.Heads)
			require.Equal(t, tc.kv, c.KVHeads)
			require.Equal(t, tc.hidden/tc.heads, c.HeadDim)
			require.Equal(t, tc.vocab, c.Vocab)
			require.Equal(t, tc.theta, c.RopeTheta)
			require.Equal(t, 1e-5, c.RMSEps)
			require.Equal(t, tc.ctx, c.ContextLength)
			require.Equal(t, models.RopeHalfSplit, c.RopeLayout)
			if tc.params != 0 {
				require.Equal(t, tc.params, c.ParamCount())
				require.False(t, c.TiedEmbeddings)
			} else {
				require.GreaterOrEqual(t, c.ParamCount(), tc.minParams)
				require.LessOrEqual(t, c.ParamCount(), tc.maxParams)
			}
		})
	}
	demo, err := models.Preset("demo")
	require.NoError(t, err)
	require.Zero(t, demo.Heads%8, "demo must shard over TP = 8")
	require.Zero(t, demo.KVHeads%8, "demo must shard over TP = 8")
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func TestConfigFromHF(t *testing.T) {
	// Llama-3-8B's published config.json.
	llama3 := `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256
}`
	dir := filepath.Join(t.TempDir(), "Meta-Llama-3-8B")
	require.NoError(t, os.Mkdir(dir, 0o755))
	writeFile(t, filepath.Join(dir, "config.json"), llama3)
	want, err := models.Preset("llama-3-8b")
	require.NoError(t, err)
	want.Name = "Meta-Llama-3-8B"
	for _, p := range []string{dir, filepath.Join(dir, "config.json")} {
		got, err := models.ConfigFromHF(p)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}

	// Defaults for absent optional keys.
	got, err := models.ConfigFromHF(writeFile(t, filepath.Join(t.TempDir(), "c.json"),
		`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}`))
	require.NoError(t, err)
	require.Equal(t, 4, got.KVHeads)
	require.Equal(t, 16, got.HeadDim)
	require.Equal(t, 10000.0, got.RopeTheta)
	require.Equal(t, 1e-6, got.RMSEps)
	require.Equal(t, 2048, got.ContextLength)
	require.False(t, got.TiedEmbeddings)
	require.Equal(t, models.RopeHalfSplit, got.RopeLayout)

	// head_dim given explicitly (not hidden/heads) and tied embeddings.
	got, err = models.ConfigFromHF(writeFile(t, filepath.Join(t.TempDir(), "c.json"),
		`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "head_dim": 32, "tie_word_embeddings": true}`))
	require.NoError(t, err)
	require.Equal(t, 32, got.HeadDim)
	require.True(t, got.TiedEmbeddings)

	base := `"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"missing hidden_size", `{"intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}`, "hidden_size"},
		{"missing vocab_size", `{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}`, "vocab_size"},
		{"broken json", `{"hidden_size": 64,`, "c.json"},
		{"wrong type", `{"hidden_size": "64"}`, "hidden_size"},
		{"model_type", `{` + base + `, "model_type": "gpt_neox"}`, `model_type "gpt_neox": supported are "llama", "mistral", "qwen2" and "qwen3"`},
		{"rope_scaling incomplete", `{` + base + `, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}`, "low_freq_factor missing"},
		{"rope_scaling type", `{` + base + `, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}`, `rope_type "yarn": only "llama3" is supported`},
		{"attention_bias", `{` + base + `, "attention_bias": true}`, "attention_bias"},
		{"hidden_act", `{` + base + `, "hidden_act": "gelu"}`, "hidden_act"},
		{"bad kv heads", `{` + base + `, "num_key_value_heads": 3}`, "KVHeads"},
		{"indivisible heads", `{"hidden_size": 66, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}`, "head_dim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ConfigFromHF(writeFile(t, filepath.Join(t.TempDir(), "c.json"), tc.body))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "c.json")
		})
	}
	_, err = models.ConfigFromHF(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
}

// TestConfigFromHFArchitectures: Qwen2, Qwen3 and Mistral config.json files become their
// architectures' configs; Llama 3.1's rope_scaling is read; a Mistral sliding window caps
// the context, Qwen's only where use_sliding_window is true.
func TestConfigFromHFArchitectures(t *testing.T) {
	base := `"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 8192`
	read := func(body string) models.Config {
		got, err := models.ConfigFromHF(writeFile(t, filepath.Join(t.TempDir(), "c.json"), "{"+base+", "+body+"}"))
		require.NoError(t, err)
		return got
	}
	q2 := read(`"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": false`)
	require.Equal(t, "qwen2", q2.Arch)
	require.True(t, q2.QKVBias)
	require.Equal(t, 8192, q2.ContextLength)
	q3 := read(`"model_type": "qwen3", "attention_bias": false`)
	require.Equal(t, "qwen3", q3.Arch)
	require.True(t, q3.QKNorm)
	mistral := read(`"model_type": "mistral", "sliding_window": 4096`)
	require.Equal(t, "", mistral.Arch)
	require.Equal(t, 4096, mistral.ContextLength)
	l31 := read(`"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`)
	require.Equal(t, models.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}, l31.RopeScaling)
	for _, c := range []models.Config{q2, q3, l31} {
		path := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, models.WriteHFConfig(path, c))
		back, err := models.ConfigFromHF(path)
		require.NoError(t, err)
		back.Name = c.Name
		require.Equal(t, c, back)
	}
}

func TestWriteHFConfigRoundTrip(t *testing.T) {
	for _, name := range models.Presets() {
		t.Run(name, func(t *testing.T) {
			c, err := models.Preset(name)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "config.json")
			require.NoError(t, models.WriteHFConfig(path, c))
			got, err := models.ConfigFromHF(path)
			require.NoError(t, err)
			require.Equal(t, c, got)
		})
	}
	err := models.WriteHFConfig(filepath.Join(t.TempDir(), "config.json"), models.Config{})
	require.Error(t, err)
}
