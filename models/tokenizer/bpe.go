package tokenizer

import (
	"container/heap"
	"fmt"
	"strings"
	"sync"
)

// byteToRune is GPT-2's bytes_to_unicode: the printable bytes ! to ~, ¡ to ¬ and ® to ÿ map
// to themselves, the other 68 bytes to U+0100 onwards in byte order, so every byte is one
// visible character (a space is "Ġ", a newline "Ċ").
var byteToRune, runeToByte = func() (b2r [256]rune, r2b [0x144]int16) {
	for i := range r2b {
		r2b[i] = -1
	}
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = int16(b)
	}
	return b2r, r2b
}()

// encodeByteLevel maps each byte of s to its GPT-2 character.
func encodeByteLevel(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// decodeByteLevel maps GPT-2 characters back to bytes; a character outside the map (which a
// byte-level vocab entry should not hold) is kept as its UTF-8.
func decodeByteLevel(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r >= 0 && int(r) < len(runeToByte) && runeToByte[r] >= 0 {
			b.WriteByte(byte(runeToByte[r]))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bpeCacheMax bounds the merge cache; past it the cache starts over.
const bpeCacheMax = 1 << 16

// bpeCache remembers the ids of pre-tokens already merged. Pre-tokens repeat a lot (" the",
// " and"), and merging is the expensive part.
type bpeCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

func newBPECache() *bpeCache { return &bpeCache{m: make(map[string][]int)} }

func (c *bpeCache) get(word string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[word]
	c.mu.RUnlock()
	return ids, ok
}

func (c *bpeCache) put(word string, ids []int) {
	c.mu.Lock()
	if len(c.m) >= bpeCacheMax {
		clear(c.m)
	}
	c.m[word] = ids
	c.mu.Unlock()
}

// bpeBigram is a candidate merge of two adjacent symbols with their lengths when it was made,
// so a candidate whose symbols have changed since is recognised and skipped.
type bpeBigram struct {
	left, right int
	ln, rn      int
	rank        int
}

// bpeQueue pops the candidate with the lowest merge rank, the leftmost among equal ranks
// (llama.cpp's llm_bigram_bpe::comparator).
type bpeQueue []bpeBigram

func (q bpeQueue) Len() int { return len(q) }
func (q bpeQueue) Less(i, j int) bool {
	return q[i].rank < q[j].rank || (q[i].rank == q[j].rank && q[i].left < q[j].left)
}
func (q bpeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bpeQueue) Push(x any)   { *q = append(*q, x.(bpeBigram)) }
func (q *bpeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// encodeBPE appends the byte-level BPE tokenization of one raw-text fragment to out: the
// vocab's pre-tokenizer splits it, and each pre-token is merged on its own.
func (t *Tokenizer) encodeBPE(fragment string, out []int) ([]int, error) {
	words, err := t.pre.split(fragment)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", t.source, err)
	}
	for _, word := range words {
		if ids, ok := t.cache.get(word); ok {
			out = append(out, ids...)
			continue
		}
		n := len(out)
		out = t.bpeWord(word, out)
		t.cache.put(word, append([]int(nil), out[n:]...))
	}
	return out, nil
}

// bpeWord appends the ids of one pre-token. It is llama.cpp's llm_tokenizer_bpe_session:
//
//	w = the pre-token's bytes, each mapped to its GPT-2 character
//	symbols = the characters of w
//	repeat: merge the adjacent pair (a, b) with the lowest rank in the merges list (leftmost
//	        on ties), until no adjacent pair is a merge
//	each symbol → its token; a symbol not in the vocab → each of its bytes that is a
//	        one-byte token, the others dropped
//
// So a vocab that lacks the token of some byte (falcon's has none for several control
// characters, \v among them; starcoder's none for 0xFF) drops that byte, as llama.cpp does.
func (t *Tokenizer) bpeWord(word string, out []int) []int {
	w := encodeByteLevel(word)
	if t.ignoreMerges {
		if id, ok := t.toID[w]; ok {
			return append(out, id)
		}
	}
	symbols := characters(w)
	q := make(bpeQueue, 0, len(symbols))
	tryAdd := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		l, r := symbols[left], symbols[right]
		rank, ok := t.ranks[[2]string{w[l.start : l.start+l.n], w[r.start : r.start+r.n]}]
		if !ok {
			return
		}
		heap.Push(&q, bpeBigram{left: left, right: right, ln: l.n, rn: r.n, rank: rank})
	}
	for i := 1; i < len(symbols); i++ {
		tryAdd(i-1, i)
	}
	for q.Len() > 0 {
		bg := heap.Pop(&q).(bpeBigram)
		l, r := &symbols[bg.left], &symbols[bg.right]
		if l.n == 0 || r.n == 0 || l.n != bg.ln || r.n != bg.rn {
			continue // outdated: one of them has been merged since
		}
		merge(symbols, bg.left, bg.right)
		tryAdd(l.prev, bg.left)
		tryAdd(bg.left, l.next)
	}
	for i := 0; len(symbols) > 0 && i != -1; i = symbols[i].next {
		s := w[symbols[i].start : symbols[i].start+symbols[i].n]
		if id, ok := t.toID[s]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(s); j++ {
			if id, ok := t.toID[s[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
