package tokenizer

import "unicode/utf8"

// symbol is a run of the text being merged (SentencePiece or BPE), linked to its
// neighbours; n == 0 once it has been merged into its left neighbour.
type symbol struct {
	start, n   int
	prev, next int
}

// characters splits text into one symbol per UTF-8 character, linked in order; a byte that
// is not valid UTF-8 is a symbol of its own. (llama.cpp takes a length from the first byte
// without validating, so its symbols swallow the bytes after an invalid one; for valid
// UTF-8 the two agree.)
func characters(text string) []symbol {
	symbols := make([]symbol, 0, len(text))
	for off := 0; off < len(text); {
		_, n := utf8.DecodeRuneInString(text[off:])
		i := len(symbols)
		next := i + 1
		if off+n == len(text) {
			next = -1
		}
		symbols = append(symbols, symbol{start: off, n: n, prev: i - 1, next: next})
		off += n
	}
	return symbols
}

// merge appends symbol right, left's next, to left and unlinks it (its n becomes 0).
func merge(symbols []symbol, left, right int) {
	l, r := &symbols[left], &symbols[right]
	l.n += r.n
	r.n = 0
	l.next = r.next
	if r.next >= 0 {
		symbols[r.next].prev = left
	}
}
