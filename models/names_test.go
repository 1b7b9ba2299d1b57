package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models"
)

func TestHFNamesRoundTrip(t *testing.T) {
	c := validConfig()
	for _, ti := range c.Tensors(0) {
		hf, err := models.HFName(ti.Name)
		require.NoError(t, err, ti.Name)
		back, ok := models.CanonicalName(hf)
		require.True(t, ok, hf)
		require.Equal(t, ti.Name, back)
	}
	for hf, want := range map[string]string{
		"model.embed_tokens.weight":                      models.TokenEmbd,
		"model.layers.0.self_attn.q_proj.weight":         "blk.0.attn_q.weight",
		"model.layers.11.self_attn.k_proj.weight":        "blk.11.attn_k.weight",
		"model.layers.3.self_attn.v_proj.weight":         "blk.3.attn_v.weight",
		"model.layers.3.self_attn.o_proj.weight":         "blk.3.attn_output.weight",
		"model.layers.79.mlp.gate_proj.weight":           "blk.79.ffn_gate.weight",
		"model.layers.2.mlp.up_proj.weight":              "blk.2.ffn_up.weight",
		"model.layers.2.mlp.down_proj.weight":            "blk.2.ffn_down.weight",
		"model.layers.5.input_layernorm.weight":          "blk.5.attn_norm.weight",
		"model.layers.5.post_attention_layernorm.weight": "blk.5.ffn_norm.weight",
		"model.norm.weight":                              models.OutputNorm,
		"lm_head.weight":                                 models.Output,
	} {
		got, ok := models.CanonicalName(hf)
		require.True(t, ok, hf)
		require.Equal(t, want, got, hf)
	}
	for _, bad := range []string{
		"", "model.layers.x.mlp.up_proj.weight", "model.layers.01.mlp.up_proj.weight",
		"model.layers.-1.mlp.up_proj.weight", "model.layers.1.mlp.up_proj.bias",
		"model.layers.1.self_attn.rotary_emb.inv_freq", "model.layers.1", "lm_head.bias",
	} {
		_, ok := models.CanonicalName(bad)
		require.False(t, ok, bad)
	}
	for _, bad := range []string{"", "blk.1.attn_qkv.weight", "blk.x.attn_q.weight", "rope_freqs.weight"} {
		_, err := models.HFName(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), bad)
	}
}

func TestParseLayerTensorName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer int
		kind  string
		ok    bool
	}{
		{"blk.0.attn_q.weight", 0, models.AttnQ, true},
		{"blk.17.ffn_down.weight", 17, models.FFNDown, true},
		{models.LayerTensorName(3, models.FFNNorm), 3, models.FFNNorm, true},
		{"blk.01.attn_q.weight", 0, "", false},
		{"blk.1.attn_q.bias", 0, "", false},
		{"blk.1.a.b.weight", 0, "", false},
		{"blk.1..weight", 0, "", false},
		{"token_embd.weight", 0, "", false},
		{"blk.attn_q.weight", 0, "", false},
	} {
		layer, kind, ok := models.ParseLayerTensorName(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		if ok {
			require.Equal(t, tc.layer, layer, tc.name)
			require.Equal(t, tc.kind, kind, tc.name)
		}
	}
}
