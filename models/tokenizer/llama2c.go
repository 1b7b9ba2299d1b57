package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// The fixed ids of a llama2.c tokenizer: tokenizer.py exports a SentencePiece model with
// <unk>, <s>, </s> first and the 256 byte tokens after them, and run.c hard-codes BOS 1, EOS 2
// and byte token b at id b+3.
const (
	llama2cUnk = 0
	llama2cBOS = 1
	llama2cEOS = 2
)

// FromLlama2C loads a tokenizer file of Andrej Karpathy's llama2.c (MIT license,
// github.com/karpathy/llama2.c): tokenizer.bin, or the tok512.bin of the tinyllamas
// stories260K model. See FromLlama2CBytes for the format.
func FromLlama2C(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return FromLlama2CBytes(path, data)
}

// FromLlama2CBytes builds a tokenizer from the bytes of a llama2.c tokenizer file; source
// names them in errors (a path, or the name of an embedded file).
//
// The format is what llama2.c's tokenizer.py writes and run.c's build_tokenizer reads, all
// little-endian: an int32 max_token_length, then one record per token until the end of the
// data: a float32 merge score, an int32 byte length, and that many bytes of piece text. The
// vocabulary size is not stored; it is the number of records. tokenizer.py writes
// SentencePiece's "▁" as a plain space, so spaces become "▁" again here; BOS and EOS are
// stored as "\n<s>\n" and "\n</s>\n".
//
// The result is a SentencePiece tokenizer: id 0 unknown, 1 BOS and 2 EOS (control), pieces
// "<0xHH>" byte tokens, the rest normal; Encode adds BOS (not EOS) and a space prefix. That
// is run.c's encode: BOS, a dummy-prefix space for non-empty text, the text's characters
// merged by best score (leftmost on ties), bytes for characters outside the vocabulary.
//
// An empty file, a truncated record, or a length that is negative, above max_token_length or
// past the end is an error naming the token; no input makes it panic.
func FromLlama2CBytes(source string, data []byte) (*Tokenizer, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("tokenizer: %s: llama2.c tokenizer: the file is empty: no max_token_length header, no token 0", source)
	}
	if len(data) < 4 {
		return nil, fmt.Errorf("tokenizer: %s: llama2.c tokenizer: %d bytes, too short for the int32 max_token_length header before token 0", source, len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen < 0 {
		return nil, fmt.Errorf("tokenizer: %s: llama2.c tokenizer: max_token_length %d is negative", source, maxLen)
	}
	v := vocab{
		kind: SentencePiece,
		bos:  llama2cBOS, eos: llama2cEOS, unk: llama2cUnk,
		addBOS: true, addSpacePrefix: true,
	}
	for off, i := 4, 0; off < len(data); i++ {
		at := func(format string, args ...any) error { return llama2cTokenError(source, i, off, format, args...) }
		if len(data)-off < 8 {
			return nil, at("truncated: %d bytes left, a record needs a float32 score and an int32 length", len(data)-off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		switch left := len(data) - off - 8; {
		case n < 0:
			return nil, at("piece length %d is negative", n)
		case n > maxLen:
			return nil, at("piece length %d exceeds max_token_length %d", n, maxLen)
		case int(n) > left:
			return nil, at("piece length %d runs past the end of the file (%d bytes left)", n, left)
		}
		piece := string(data[off+8 : off+8+int(n)])
		off += 8 + int(n)

		typ := TypeNormal
		switch {
		case i == llama2cUnk:
			typ = TypeUnknown
		case i == llama2cBOS || i == llama2cEOS:
			typ = TypeControl
		case isBytePiece(piece):
			typ = TypeByte
		default:
			piece = strings.ReplaceAll(piece, " ", "▁")
		}
		v.tokens = append(v.tokens, piece)
		v.scores = append(v.scores, score)
		v.types = append(v.types, typ)
	}
	if len(v.tokens) == 0 {
		return nil, fmt.Errorf("tokenizer: %s: llama2.c tokenizer: token 0 missing: the file holds only the max_token_length header", source)
	}
	if len(v.tokens) <= llama2cEOS {
		return nil, fmt.Errorf("tokenizer: %s: llama2.c tokenizer: %d tokens, too few for <unk>, BOS and EOS at ids 0-2", source, len(v.tokens))
	}
	return build(source, v)
}

// isBytePiece reports whether piece is a byte token "<0xHH>" with upper-case hex digits, the
// spelling build looks byte tokens up by.
func isBytePiece(piece string) bool {
	if len(piece) != 6 || !strings.HasPrefix(piece, "<0x") || piece[5] != '>' {
		return false
	}
	for _, c := range piece[3:5] {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// llama2cTokenError is the error for the record of token i, which starts at byte off.
func llama2cTokenError(source string, i, off int, format string, args ...any) error {
	return fmt.Errorf("tokenizer: %s: llama2.c tokenizer: token %d (byte offset %d): %s", source, i, off, fmt.Sprintf(format, args...))
}
