package comm

import "github.com/tpslice/tpslice/device"

// treeNode is one rank's place in one binary tree: its parent (-1 at the root) and up to
// two children, the smaller rank first (-1 where absent).
type treeNode struct {
	parent int
	child  [2]int
}

// leaf reports whether the node has no children.
func (t treeNode) leaf() bool { return t.child[0] < 0 }

// doubleTree is the two trees of the tree all-reduce over n ranks, indexed [tree][rank].
type doubleTree [2][device.MaxNodeDevices]treeNode

// buildDoubleTree builds NCCL's double binary tree (src/graph/trees.cc, ncclGetDtree) over
// n ranks, with one change that makes every rank a leaf in some tree for odd n too.
//
// Tree 0 is the in-order binary tree over positions 1..n, rank r at position r+1: the
// position p whose lowest set bit is b hangs below p-b or p+b, whichever has 2b as its
// lowest set bit, or below p-b when p+b is past n; the highest power of two ≤ n is the
// root. So odd positions (even ranks) are the leaves, and a rank's children differ from it
// by half its lowest bit. Tree 1 is tree 0 mirrored (rank r in the place of n-1-r) for even
// n, or shifted by one rank (r in the place of r-1) for odd n, as NCCL builds its second
// tree. Both trees have depth ⌊log2 n⌋.
//
// What this guarantees: the leaves of tree 0 are exactly the even ranks. For even n the
// mirror swaps parities, so the leaves of tree 1 are exactly the odd ranks: every rank is a
// leaf in exactly one tree and has children in exactly the other, so it has at most two
// children over both trees together, and the reduction work and traffic are balanced. For
// odd n the shift makes the leaves of tree 1 the odd ranks and rank 0: every rank is still a
// leaf in at least one tree (rank 0 in both), and no rank has children in both.
//
// NCCL's own btree puts rank 0 above the in-order tree of ranks 1..n-1 (rank r at position
// r), a root with a single child: for n = 8 its two trees are these two, swapped, but for
// odd n its rank 0 has children in both trees, and for other n it is one level deeper.
func buildDoubleTree(n int) *doubleTree {
	var dt doubleTree
	for r := range n {
		p := r + 1
		b := p & -p
		up := (p - b) | b<<1 // p-b or p+b: the one whose lowest set bit is 2b
		if up > n {
			up = p - b // 0 for the root
		}
		dt[0][r].parent = up - 1
	}
	for r := range n {
		if n%2 == 0 {
			dt[1][r].parent = mapRank(dt[0][n-1-r].parent, func(q int) int { return n - 1 - q })
		} else {
			dt[1][r].parent = mapRank(dt[0][(r+n-1)%n].parent, func(q int) int { return (q + 1) % n })
		}
	}
	for t := range dt {
		for r := range n {
			dt[t][r].child = [2]int{-1, -1}
		}
		for r := range n { // ascending r: the smaller child first
			if p := dt[t][r].parent; p >= 0 {
				c := &dt[t][p].child
				if c[0] < 0 {
					c[0] = r
				} else {
					c[1] = r
				}
			}
		}
	}
	return &dt
}

// mapRank applies f to a rank, keeping -1 (no rank) as it is.
func mapRank(q int, f func(int) int) int {
	if q < 0 {
		return q
	}
	return f(q)
}

// TreeDepth is the depth of both trees over n ranks: the hops from the deepest leaf to the
// root, ⌊log2 n⌋ (0 for one rank).
func TreeDepth(n int) int {
	d := 0
	for 1<<(d+1) <= n {
		d++
	}
	return d
}
