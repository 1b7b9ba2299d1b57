package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlockPool(t *testing.T) {
	p := NewBlockPool(4)
	a, err := p.Alloc(3)
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1, 2}, a)
	_, err = p.Alloc(2)
	require.ErrorContains(t, err, "KV cache full: 2 blocks wanted, 1 of 4 free")
	p.Free(a)
	require.Equal(t, 0, p.InUse())
	require.Panics(t, func() { p.Free(a[:1]) }, "a block freed twice")
}
