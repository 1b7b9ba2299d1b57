package tokenizer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/models/format"
)

// The GGUF metadata keys FromGGUF reads.
const (
	keyModel       = "tokenizer.ggml.model"
	keyPre         = "tokenizer.ggml.pre"
	keyTokens      = "tokenizer.ggml.tokens"
	keyScores      = "tokenizer.ggml.scores"
	keyTokenType   = "tokenizer.ggml.token_type"
	keyMerges      = "tokenizer.ggml.merges"
	keyBOS         = "tokenizer.ggml.bos_token_id"
	keyEOS         = "tokenizer.ggml.eos_token_id"
	keyUNK         = "tokenizer.ggml.unknown_token_id"
	keyAddBOS      = "tokenizer.ggml.add_bos_token"
	keyAddEOS      = "tokenizer.ggml.add_eos_token"
	keyAddSpacePfx = "tokenizer.ggml.add_space_prefix"
)

// FromGGUF loads the tokenizer stored in a GGUF file's tokenizer.ggml.* metadata. The file
// may be vocab-only (no tensors) or a full model; tensor data is never read. Supported are
// tokenizer.ggml.model "llama" (SentencePiece) and "gpt2" (byte-level BPE) with a
// tokenizer.ggml.pre that llama.cpp runs with one of the regex lists of pretokenize_types.go:
// gpt-2, llama-bpe (llama3, llama-v3), qwen2, deepseek-llm, deepseek-coder, falcon,
// starcoder, refact, default and the names that share their regexes (dbrx, smaug-bpe, mpt,
// olmo, stablelm2, …). Any other value is an error naming it and the supported list; a
// missing one is too (llama.cpp would fall back to its "default" regexes with a warning).
// Errors name the file and the missing or malformed field.
//
// Defaults follow llama.cpp: for "llama", BOS 1, EOS 2, unknown 0, add_bos_token true,
// add_space_prefix true; for "gpt2", add_bos_token false except with the llama3
// pre-tokenizer, which also takes a pre-token that is a vocab entry as that one token
// (ignore_merges). A gpt2 vocab without bos_token_id/eos_token_id has none (−1), where
// llama.cpp would fall back to id 11.
func FromGGUF(path string) (*Tokenizer, error) {
	f, err := format.ParseGGUF(path) // the weights' parse rules; errors name the file
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return FromGGUFFile(path, f)
}

// FromGGUFFile is FromGGUF for a header already parsed (with its large arrays, the
// vocabulary's) from path, so that one parse serves the weights and the tokenizer.
func FromGGUFFile(path string, f *gguf.GGUFFile) (tok *Tokenizer, err error) {
	defer func() { // gguf-parser-go panics on some malformed values; turn that into an error
		if r := recover(); r != nil {
			tok, err = nil, fmt.Errorf("tokenizer: %s: malformed GGUF: %v", path, r)
		}
	}()
	md := ggufMeta{path: path, file: f}

	model, ok, err := md.str(keyModel)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, md.missing(keyModel)
	}
	var v vocab
	switch model {
	case "llama":
		v = vocab{kind: SentencePiece, bos: 1, eos: 2, unk: 0, addBOS: true, addSpacePrefix: true}
	case "gpt2":
		v = vocab{kind: ByteLevelBPE, bos: -1, eos: -1, unk: -1}
		pre, ok, err := md.str(keyPre)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s missing: a gpt2 vocab needs its pre-tokenizer type (want one of %s)", path, keyPre, supportedPreTypes())
		}
		typ, ok := bpePreTypes[pre]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s %q is not a supported pre-tokenizer type (want one of %s)", path, keyPre, pre, supportedPreTypes())
		}
		if v.pre, err = typ.preTokenizer(); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %s %q: %w", path, keyPre, pre, err)
		}
		v.ignoreMerges, v.addBOS = typ.ignoreMerges, typ.addBOS
	default:
		return nil, fmt.Errorf("tokenizer: %s: %s %q is not supported (want llama or gpt2)", path, keyModel, model)
	}

	if v.tokens, ok, err = md.strings(keyTokens); err != nil {
		return nil, err
	} else if !ok {
		return nil, md.missing(keyTokens)
	}
	n := len(v.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %s: %s is empty", path, keyTokens)
	}
	if v.scores, _, err = md.float32s(keyScores, n); err != nil {
		return nil, err
	}
	var types []int32
	if types, _, err = md.int32s(keyTokenType, n); err != nil {
		return nil, err
	}
	if types != nil {
		v.types = make([]TokenType, n)
		for i, typ := range types {
			v.types[i] = TokenType(typ)
		}
	}
	if v.kind == ByteLevelBPE {
		merges, ok, err := md.strings(keyMerges)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, md.missing(keyMerges)
		}
		v.merges = make([][2]string, len(merges))
		for i, m := range merges {
			if v.merges[i], err = splitMerge(m); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: %s[%d]: %w", path, keyMerges, i, err)
			}
		}
	}
	for _, s := range []struct {
		key string
		id  *int
	}{{keyBOS, &v.bos}, {keyEOS, &v.eos}, {keyUNK, &v.unk}} {
		id, ok, err := md.tokenID(s.key, n)
		if err != nil {
			return nil, err
		}
		if ok {
			*s.id = id
		} else if *s.id >= n {
			*s.id = -1 // a llama.cpp default that this small vocab does not have
		}
	}
	for _, key := range ggufEndOfGenerationKeys {
		id, ok, err := md.tokenID(key, n)
		if err != nil {
			return nil, err
		}
		if ok {
			v.eog = append(v.eog, id)
		}
	}
	for _, s := range []struct {
		key string
		b   *bool
	}{{keyAddBOS, &v.addBOS}, {keyAddEOS, &v.addEOS}, {keyAddSpacePfx, &v.addSpacePrefix}} {
		b, ok, err := md.boolean(s.key)
		if err != nil {
			return nil, err
		}
		if ok {
			*s.b = b
		}
	}
	return build(path, v)
}

// splitMerge splits a merges entry "a b" at its first space after the first byte, as
// llama.cpp does.
func splitMerge(m string) ([2]string, error) {
	if len(m) > 1 {
		if i := strings.IndexByte(m[1:], ' '); i >= 0 {
			a, b := m[:i+1], m[i+2:]
			if b != "" {
				return [2]string{a, b}, nil
			}
		}
	}
	return [2]string{}, fmt.Errorf("merge %q is not two pieces separated by a space", m)
}

// ggufMeta reads typed tokenizer fields from a parsed GGUF file, checking each value's type
// before calling gguf-parser-go's accessors (which panic on a mismatch).
type ggufMeta struct {
	path string
	file *gguf.GGUFFile
}

func (m ggufMeta) missing(key string) error {
	return fmt.Errorf("tokenizer: %s: %s missing", m.path, key)
}

func (m ggufMeta) wrongType(key string, got, want string) error {
	return fmt.Errorf("tokenizer: %s: %s holds %s, want %s", m.path, key, got, want)
}

func (m ggufMeta) str(key string) (string, bool, error) {
	kv, ok := m.file.Header.MetadataKV.Get(key)
	if !ok {
		return "", false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeString {
		return "", false, m.wrongType(key, kv.ValueType.String(), "a string")
	}
	return kv.ValueString(), true, nil
}

func (m ggufMeta) boolean(key string) (bool, bool, error) {
	kv, ok := m.file.Header.MetadataKV.Get(key)
	if !ok {
		return false, false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeBool {
		return false, false, m.wrongType(key, kv.ValueType.String(), "a bool")
	}
	return kv.ValueBool(), true, nil
}

// tokenID reads an integer token id and checks it is below n.
func (m ggufMeta) tokenID(key string, n int) (int, bool, error) {
	kv, ok := m.file.Header.MetadataKV.Get(key)
	if !ok {
		return 0, false, nil
	}
	switch kv.ValueType {
	case gguf.GGUFMetadataValueTypeUint8, gguf.GGUFMetadataValueTypeInt8, gguf.GGUFMetadataValueTypeUint16,
		gguf.GGUFMetadataValueTypeInt16, gguf.GGUFMetadataValueTypeUint32, gguf.GGUFMetadataValueTypeInt32,
		gguf.GGUFMetadataValueTypeUint64, gguf.GGUFMetadataValueTypeInt64:
	default:
		return 0, false, m.wrongType(key, kv.ValueType.String(), "an integer")
	}
	id := gguf.ValueNumeric[int64](kv)
	if kv.ValueType == gguf.GGUFMetadataValueTypeUint64 && gguf.ValueNumeric[uint64](kv) > uint64(n) {
		id = int64(n) // do not let a huge uint64 wrap negative
	}
	if id < 0 || id >= int64(n) {
		return 0, false, fmt.Errorf("tokenizer: %s: %s = %d is outside the vocabulary of %d tokens", m.path, key, id, n)
	}
	return int(id), true, nil
}

// array returns key's array value, checking that it holds elements of an accepted type and,
// with n ≥ 0, exactly n of them.
func (m ggufMeta) array(key string, n int, want string, ok func(gguf.GGUFMetadataValueType) bool) (gguf.GGUFMetadataKVArrayValue, bool, error) {
	kv, found := m.file.Header.MetadataKV.Get(key)
	if !found {
		return gguf.GGUFMetadataKVArrayValue{}, false, nil
	}
	if kv.ValueType != gguf.GGUFMetadataValueTypeArray {
		return gguf.GGUFMetadataKVArrayValue{}, false, m.wrongType(key, kv.ValueType.String(), "an array of "+want)
	}
	arr := kv.ValueArray()
	if !ok(arr.Type) {
		return arr, false, m.wrongType(key, "an array of "+arr.Type.String(), "an array of "+want)
	}
	if uint64(len(arr.Array)) != arr.Len {
		return arr, false, fmt.Errorf("tokenizer: %s: %s: the parser read %d of %d elements", m.path, key, len(arr.Array), arr.Len)
	}
	if n >= 0 && arr.Len != uint64(n) {
		return arr, false, fmt.Errorf("tokenizer: %s: %s has %d elements but %s has %d", m.path, key, arr.Len, keyTokens, n)
	}
	return arr, true, nil
}

func (m ggufMeta) float32s(key string, n int) ([]float32, bool, error) {
	arr, ok, err := m.array(key, n, "float32", func(t gguf.GGUFMetadataValueType) bool {
		return t == gguf.GGUFMetadataValueTypeFloat32 || t == gguf.GGUFMetadataValueTypeFloat64
	})
	if !ok {
		return nil, false, err
	}
	return gguf.ValuesNumeric[float32](arr), true, nil
}

func (m ggufMeta) int32s(key string, n int) ([]int32, bool, error) {
	arr, ok, err := m.array(key, n, "int32", func(t gguf.GGUFMetadataValueType) bool {
		return t.IsNumeric() && t != gguf.GGUFMetadataValueTypeFloat32 && t != gguf.GGUFMetadataValueTypeFloat64
	})
	if !ok {
		return nil, false, err
	}
	return gguf.ValuesNumeric[int32](arr), true, nil
}

// strings returns a string array exactly as stored. gguf-parser-go v0.28.1 trims Unicode
// white space off every string it reads (bytes.TrimSpace in _GGUFReader.ReadString). In the
// Llama 2 vocab that corrupts 37 of the 32000 entries: "\u00a0\u00a0" (id 8655), "\r" and
// "\u3000" become "", ";\r" (2104) becomes ";", "▁{\r" (3336) "▁{", so text with CRLF
// line ends or non-breaking spaces would tokenize differently from llama.cpp. So the parser
// locates the array (its StartOffset) and its result is checked against, but the bytes are
// re-read from the file here.
func (m ggufMeta) strings(key string) ([]string, bool, error) {
	arr, ok, err := m.array(key, -1, "string", func(t gguf.GGUFMetadataValueType) bool {
		return t == gguf.GGUFMetadataValueTypeString
	})
	if !ok {
		return nil, false, err
	}
	raw, err := m.rereadStrings(arr)
	if err != nil {
		return nil, false, fmt.Errorf("tokenizer: %s: %s: %w", m.path, key, err)
	}
	trimmed := arr.ValuesString()
	for i := range raw {
		if strings.TrimSpace(raw[i]) != trimmed[i] {
			return nil, false, fmt.Errorf("tokenizer: %s: %s[%d]: the bytes at offset %d read %q where the GGUF parser read %q", m.path, key, i, arr.StartOffset, raw[i], trimmed[i])
		}
	}
	return raw, true, nil
}

// rereadStrings reads the string array that starts (with its element type) at
// arr.StartOffset of the file.
func (m ggufMeta) rereadStrings(arr gguf.GGUFMetadataKVArrayValue) ([]string, error) {
	fh, err := os.Open(m.path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if m.file.Header.Magic == gguf.GGUFMagicGGUFBe {
		bo = binary.BigEndian
	}
	r := bufio.NewReaderSize(io.NewSectionReader(fh, arr.StartOffset, st.Size()-arr.StartOffset), 1<<16)
	remaining := st.Size() - arr.StartOffset
	readLen := func() (uint64, error) {
		if m.file.Header.Version <= gguf.GGUFVersionV1 {
			var v uint32
			err := binary.Read(r, bo, &v)
			remaining -= 4
			return uint64(v), err
		}
		var v uint64
		err := binary.Read(r, bo, &v)
		remaining -= 8
		return v, err
	}
	var typ uint32
	if err := binary.Read(r, bo, &typ); err != nil {
		return nil, fmt.Errorf("re-reading the element type at offset %d: %w", arr.StartOffset, err)
	}
	remaining -= 4
	count, err := readLen()
	if err != nil {
		return nil, fmt.Errorf("re-reading the length at offset %d: %w", arr.StartOffset, err)
	}
	if gguf.GGUFMetadataValueType(typ) != gguf.GGUFMetadataValueTypeString || count != arr.Len {
		return nil, fmt.Errorf("offset %d holds %d elements of type %d, not the parser's %d strings (a split GGUF whose first part was not given?)", arr.StartOffset, count, typ, arr.Len)
	}
	out := make([]string, count)
	buf := make([]byte, 0, 64)
	for i := range out {
		l, err := readLen()
		if err != nil {
			return nil, fmt.Errorf("re-reading string %d: %w", i, err)
		}
		if l > uint64(remaining) {
			return nil, fmt.Errorf("string %d claims %d bytes, %d remain in the file", i, l, remaining)
		}
		if uint64(cap(buf)) < l {
			buf = make([]byte, l)
		}
		buf = buf[:l]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("re-reading string %d: %w", i, err)
		}
		remaining -= int64(l)
		out[i] = string(buf)
	}
	return out, nil
}
