package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Stream is an incremental detokenizer for one sequence: feed it the ids as they are sampled
// and it returns the text each one completes. A character split over several tokens (byte
// fallback tokens, byte-level BPE pieces) is held back until its last byte arrives, so every
// string Add and Flush return is valid UTF-8. Concatenated, the strings equal Decode of all
// the ids whenever that is valid UTF-8; bytes that can never form a character come out as
// U+FFFD. A Stream is not safe for concurrent use; use one per sequence.
type Stream struct {
	t       *Tokenizer
	pending []byte // an incomplete UTF-8 sequence at the end of the text so far
	started bool   // whether the first id (whose leading space may be stripped) has been seen
	err     error
}

// NewStream returns an incremental detokenizer that starts at the beginning of a sequence,
// where Decode's leading-space rule applies.
func (t *Tokenizer) NewStream() *Stream { return &Stream{t: t} }

// NewStreamAfter returns an incremental detokenizer that continues a sequence already
// holding prefix (a prompt): the text of the ids given to it is Decode(prefix + ids) less
// Decode(prefix), as llama.cpp's server and vLLM's incremental detokenizer make a
// completion's text. So SentencePiece's leading space is stripped only at the start of a
// sequence (an empty prefix, as NewStream): "Lily and Ben" continues " were", not "were".
// Bytes of a character that prefix leaves unfinished are held, and the character comes
// out whole with the id that completes it. Err reports an out-of-range id of prefix.
func (t *Tokenizer) NewStreamAfter(prefix []int) *Stream {
	s := t.NewStream()
	for _, id := range prefix {
		s.Add(id) // the prefix's text is the caller's already; what it leaves is state
	}
	return s
}

// Add appends id and returns the text it completes, possibly "". An id outside the
// vocabulary adds nothing; Err reports the first such id.
func (s *Stream) Add(id int) string {
	if err := s.t.checkID(id); err != nil {
		if s.err == nil {
			s.err = err
		}
		return ""
	}
	p := s.t.text[id]
	if !s.started {
		s.started = true
		if s.t.stripsLeadingSpace() {
			p = strings.TrimPrefix(p, " ")
		}
	}
	if p == "" {
		return ""
	}
	if len(s.pending) == 0 && utf8.ValidString(p) {
		return p // the common case: a piece of whole characters
	}
	s.pending = append(s.pending, p...)
	return s.drain()
}

// Flush ends the sequence: it returns what is held back, an incomplete character that no
// later id completed, as one U+FFFD, or "" when nothing is held. The stream may be reused
// for more ids afterwards, continuing the same text.
func (s *Stream) Flush() string {
	if len(s.pending) == 0 {
		return ""
	}
	s.pending = s.pending[:0]
	return string(utf8.RuneError)
}

// Err returns the error of the first out-of-range id given to Add, or nil.
func (s *Stream) Err() error { return s.err }

// drain returns the complete characters of pending, invalid bytes replaced by U+FFFD, and
// keeps a trailing incomplete sequence (a valid prefix of a character).
func (s *Stream) drain() string {
	var b strings.Builder
	i := 0
	for i < len(s.pending) {
		rest := s.pending[i:]
		if !utf8.FullRune(rest) {
			break // a valid prefix of a character: wait for the rest
		}
		r, n := utf8.DecodeRune(rest)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(rest[:n])
		}
		i += n
	}
	s.pending = append(s.pending[:0], s.pending[i:]...)
	return b.String()
}
