package tokenizer

import (
	"container/heap"
	"fmt"
	"strings"
)

// spmBigram is a candidate merge of two adjacent symbols whose concatenation is a vocab
// token; size is the concatenation's length when the candidate was made, so a candidate
// whose symbols have changed since is recognised and skipped.
type spmBigram struct {
	left, right int
	score       float32
	size        int
}

// spmQueue pops the candidate with the highest score, the leftmost among equal scores
// (llama.cpp's llm_bigram_spm::comparator).
type spmQueue []spmBigram

func (q spmQueue) Len() int { return len(q) }
func (q spmQueue) Less(i, j int) bool {
	return q[i].score > q[j].score || (q[i].score == q[j].score && q[i].left < q[j].left)
}
func (q spmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *spmQueue) Push(x any)   { *q = append(*q, x.(spmBigram)) }
func (q *spmQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// encodeSPM appends the SentencePiece tokenization of one raw-text fragment to out. It is
// llama.cpp's llm_tokenizer_spm_session::tokenize:
//
//	text = (prefix ? " " : "") + fragment, with every ' ' replaced by "▁"
//	symbols = the UTF-8 characters of text (an invalid byte is a symbol of its own)
//	repeat: merge the adjacent pair whose concatenation is a vocab token with the highest
//	        score (leftmost on ties), until no pair is a token
//	each symbol → its token, or its bytes → <0xXX> byte tokens
//
// The candidates live in a priority queue, so a fragment of n characters costs O(n log n).
func (t *Tokenizer) encodeSPM(fragment string, prefix bool, out []int) ([]int, error) {
	text := strings.ReplaceAll(fragment, " ", "▁")
	if prefix {
		text = "▁" + text
	}
	if text == "" {
		return out, nil
	}
	symbols := characters(text)
	q := make(spmQueue, 0, len(symbols))
	tryAdd := func(left, right int) {
		if left < 0 || right < 0 {
			return
		}
		l, r := symbols[left], symbols[right]
		id, ok := t.toID[text[l.start:r.start+r.n]]
		if !ok {
			return
		}
		heap.Push(&q, spmBigram{left: left, right: right, score: t.scores[id], size: l.n + r.n})
	}
	for i := 1; i < len(symbols); i++ {
		tryAdd(i-1, i)
	}
	for q.Len() > 0 {
		bg := heap.Pop(&q).(spmBigram)
		l, r := &symbols[bg.left], &symbols[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue // one of them has been merged since
		}
		merge(symbols, bg.left, bg.right)
		tryAdd(l.prev, bg.left)
		tryAdd(bg.left, l.next)
	}
	for i := 0; i != -1; i = symbols[i].next {
		s := text[symbols[i].start : symbols[i].start+symbols[i].n]
		if id, ok := t.toID[s]; ok {
			out = append(out, id)
			continue
		}
		// A merged symbol is always a token, so this is one character outside the vocab:
		// byte fallback, or the unknown token for a vocab without byte tokens.
		n := len(out)
		for j := 0; j < len(s); j++ {
			if t.byteID[s[j]] < 0 {
				out = out[:n]
				break
			}
			out = append(out, t.byteID[s[j]])
		}
		if len(out) == n {
			if t.unk < 0 {
				return nil, fmt.Errorf("tokenizer: %s: %q is not in the vocab, which has neither byte tokens for it nor an unknown token", t.source, s)
			}
			out = append(out, t.unk)
		}
	}
	return out, nil
}
