// Package models owns model configs and presets, weight loaders (GGUF, safetensors,
// deterministic dummy weights), tokenizers, and the Llama model built from layers.
package models
