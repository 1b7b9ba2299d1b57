package models

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// GGUFAlignment is the alignment WriteGGUF gives the tensor data section and each tensor.
const GGUFAlignment = 32

// GGUF metadata value types and GGML tensor types, as the format numbers them.
const (
	ggufTypeUint32  = 4
	ggufTypeFloat32 = 6
	ggufTypeString  = 8
)

// WriteGGUF writes a GGUF v3 file that OpenGGUF reads back: the header, metadata
// (general.architecture = "llama", general.name, general.alignment and the llama.* keys of
// cfg; RopeTheta and RMSEps are stored as float32), the tensor infos (dimensions innermost
// first), padding to GGUFAlignment, and each tensor's data aligned to GGUFAlignment.
// Tensors keep their names, order and dtypes (a block type's Blocks as given, or its Data
// quantized with package quant); Q and K rows are written as given, and a GGUF reader takes
// them to be in the adjacent-pairs RoPE layout.
func WriteGGUF(path string, cfg Config, tensors []Tensor) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err := checkTensors("gguf", path, tensors); err != nil {
		return err
	}
	var e ggufEncoder
	e.u32(0x46554747) // "GGUF"
	e.u32(3)
	e.u64(uint64(len(tensors)))

	type kv struct {
		key string
		typ uint32
		val any
	}
	u := func(key string, v int) kv { return kv{key, ggufTypeUint32, uint32(v)} }
	f := func(key string, v float64) kv { return kv{key, ggufTypeFloat32, float32(v)} }
	meta := []kv{
		{"general.architecture", ggufTypeString, "llama"},
		{"general.name", ggufTypeString, cfg.Name},
		u("general.alignment", GGUFAlignment),
		u("llama.context_length", cfg.ContextLength),
		u("llama.embedding_length", cfg.Hidden),
		u("llama.block_count", cfg.Layers),
		u("llama.feed_forward_length", cfg.Intermediate),
		u("llama.attention.head_count", cfg.Heads),
		u("llama.attention.head_count_kv", cfg.KVHeads),
		u("llama.attention.key_length", cfg.HeadDim),
		u("llama.attention.value_length", cfg.HeadDim),
		u("llama.rope.dimension_count", cfg.HeadDim),
		u("llama.vocab_size", cfg.Vocab),
		f("llama.rope.freq_base", cfg.RopeTheta),
		f("llama.attention.layer_norm_rms_epsilon", cfg.RMSEps),
	}
	e.u64(uint64(len(meta)))
	for _, m := range meta {
		e.str(m.key)
		e.u32(m.typ)
		switch v := m.val.(type) {
		case string:
			e.str(v)
		case uint32:
			e.u32(v)
		case float32:
			e.u32(math.Float32bits(v))
		}
	}

	var off uint64
	offsets := make([]uint64, len(tensors))
	for i, t := range tensors {
		if len(t.Info.Name) > 63 {
			return fmt.Errorf("gguf %s: write tensor %q: name longer than 63 bytes", path, t.Info.Name)
		}
		e.str(t.Info.Name)
		e.u32(uint32(len(t.Info.Shape)))
		for d := len(t.Info.Shape) - 1; d >= 0; d-- { // innermost (columns) first
			e.u64(uint64(t.Info.Shape[d]))
		}
		e.u32(ggmlType(t.Info.DType))
		e.u64(off)
		offsets[i] = off
		off = alignUp(off+uint64(t.storedBytes()), GGUFAlignment)
	}
	for len(e.b)%GGUFAlignment != 0 {
		e.b = append(e.b, 0)
	}

	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	w := bufio.NewWriterSize(file, 1<<20)
	_, err = w.Write(e.b)
	var pos uint64
	for i, t := range tensors {
		if err != nil {
			break
		}
		if _, err = w.Write(make([]byte, offsets[i]-pos)); err != nil {
			break
		}
		err = writeEncoded(w, t)
		pos = offsets[i] + uint64(t.storedBytes())
	}
	if err == nil {
		_, err = w.Write(make([]byte, alignUp(pos, GGUFAlignment)-pos))
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	return nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// ggufEncoder appends little-endian GGUF fields to a byte slice.
type ggufEncoder struct{ b []byte }

func (e *ggufEncoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *ggufEncoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *ggufEncoder) str(s string) {
	e.u64(uint64(len(s)))
	e.b = append(e.b, s...)
}
