package comm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDoubleTree: for n = 1..8 both trees are binary trees over all n ranks (one root,
// every other rank one parent, at most two children, no cycle, depth ⌊log2 n⌋), and every
// rank is a leaf in at least one of them. For even n, what NCCL's mirrored second tree
// guarantees: the leaves of tree 0 are exactly the even ranks and those of tree 1 exactly
// the odd ranks, so each rank is a leaf in exactly one tree and has at most two children
// over both. For odd n (the shifted second tree) the leaves of tree 1 are the odd ranks and
// rank 0.
func TestDoubleTree(t *testing.T) {
	for n := 1; n <= 8; n++ {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			dt := buildDoubleTree(n)
			for tr := range 2 {
				nodes := dt[tr][:n]
				roots := 0
				for r, node := range nodes {
					if node.parent < 0 {
						roots++
					} else {
						require.Less(t, node.parent, n)
						require.NotEqual(t, r, node.parent)
						require.Contains(t, nodes[node.parent].child, r, "tree %d: rank %d is not a child of its parent %d", tr, r, node.parent)
					}
					for _, c := range node.child {
						if c >= 0 {
							require.Equal(t, r, nodes[c].parent, "tree %d: child %d of rank %d", tr, c, r)
						}
					}
					if node.child[1] >= 0 {
						require.Less(t, node.child[0], node.child[1])
					}
					depth := 0
					for q := r; nodes[q].parent >= 0; q = nodes[q].parent {
						depth++
						require.LessOrEqual(t, depth, TreeDepth(n), "tree %d: rank %d is deeper than ⌊log2 n⌋ (or on a cycle)", tr, r)
					}
				}
				require.Equal(t, 1, roots, "tree %d", tr)
			}
			for r := range n {
				require.True(t, dt[0][r].leaf() || dt[1][r].leaf(), "rank %d is a leaf in neither tree", r)
				require.Equal(t, r%2 == 0, dt[0][r].leaf(), "tree 0: rank %d", r)
				if n%2 == 0 {
					require.Equal(t, r%2 == 1, dt[1][r].leaf(), "tree 1: rank %d", r)
					children := 0
					for tr := range 2 {
						for _, c := range dt[tr][r].child {
							if c >= 0 {
								children++
							}
						}
					}
					require.LessOrEqual(t, children, 2, "rank %d over both trees", r)
				} else {
					require.Equal(t, r%2 == 1 || r == 0, dt[1][r].leaf(), "tree 1: rank %d", r)
				}
			}
		})
	}
}

// TestDoubleTreeEight pins the two trees at n = 8 (NCCL's two trees for 8 ranks, swapped).
func TestDoubleTreeEight(t *testing.T) {
	dt := buildDoubleTree(8)
	parents := func(tr int) []int {
		var ps []int
		for r := range 8 {
			ps = append(ps, dt[tr][r].parent)
		}
		return ps
	}
	// tree 0: 7 → 3 → {1 → {0, 2}, 5 → {4, 6}}
	require.Equal(t, []int{1, 3, 1, 7, 5, 3, 5, -1}, parents(0))
	// tree 1: 0 → 4 → {2 → {1, 3}, 6 → {5, 7}}
	require.Equal(t, []int{-1, 2, 4, 2, 0, 6, 4, 6}, parents(1))
	require.Equal(t, [2]int{2, 6}, dt[1][4].child)
	require.Equal(t, 3, TreeDepth(8))
	require.Equal(t, 2, TreeDepth(6))
	require.Equal(t, 0, TreeDepth(1))
}
