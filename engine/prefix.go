package engine

// Automatic prefix caching, the sequence's side: its full blocks are cached under their
// chained hashes as they fill, and a sequence starting (or resuming after a preemption)
// takes the longest cached prefix of its blocks instead of computing it.

// blockHash returns the hash of s's i-th block of tokens, hashing the blocks before it
// that are not hashed yet.
func (s *sequence) blockHash(i int) blockHash {
	for n := len(s.hashes); n <= i; n++ {
		var parent blockHash
		if n > 0 {
			parent = s.hashes[n-1]
		}
		s.hashes = append(s.hashes, chainHash(parent, s.ids[n*BlockSize:(n+1)*BlockSize]))
	}
	return s.hashes[i]
}

// reusePrefix gives s, holding no blocks, the longest cached prefix of its full blocks,
// never all of its tokens (the last one is computed, for logits to choose from), and
// returns how many tokens that is.
func (e *Engine) reusePrefix(s *sequence) int {
	if e.cfg.NoPrefixCaching {
		return 0
	}
	hashes := make([]blockHash, (len(s.ids)-1)/BlockSize)
	for i := range hashes {
		hashes[i] = s.blockHash(i)
	}
	s.table = e.blocks.Lookup(hashes)
	s.pos, s.cachedBlocks = len(s.table)*BlockSize, len(s.table)
	return s.pos
}

// cacheFull caches the blocks of s that filled since it last did.
func (e *Engine) cacheFull(s *sequence) {
	if e.cfg.NoPrefixCaching {
		return
	}
	for ; s.cachedBlocks < s.pos/BlockSize; s.cachedBlocks++ {
		e.blocks.Cache(s.table[s.cachedBlocks], s.blockHash(s.cachedBlocks))
	}
}

// computingPrefix reports whether a running sequence is still computing full blocks that
// s's prompt begins with (the n choices of one request, prompts sharing a system
// prompt): s then waits until they are cached and shares them instead of computing them
// a second time. The running sequence is scheduled first at every step, so the wait ends.
func (e *Engine) computingPrefix(p *plan, s *sequence) bool {
	if e.cfg.NoPrefixCaching {
		return false
	}
	full := (len(s.ids) - 1) / BlockSize // reusePrefix never takes the last token's block
	for _, r := range p.running {
		common := 0
		for n := min(full, len(r.ids)/BlockSize); common < n && r.blockHash(common) == s.blockHash(common); common++ {
		}
		if r.cachedBlocks < common {
			return true
		}
	}
	return false
}
