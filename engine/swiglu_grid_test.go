package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// gridRecorder keeps the largest grid each kernel name ran with.
type gridRecorder struct {
	mu    sync.Mutex
	grids map[string]int
}

func (r *gridRecorder) KernelDone(s device.KernelSpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grids[s.Kernel.Name] = max(r.grids[s.Kernel.Name], s.Kernel.Grid)
}

// TestPromptSwiGLUSplitsOverSMs: a prompt's SwiGLU runs as a grid over its tokens, so that
// both cores work on it, not one block with the other core idle.
func TestPromptSwiGLUSplitsOverSMs(t *testing.T) {
	e, err := New(Config{Model: "demo", TP: 1, MaxRunning: 1, NoPrefixCaching: true})
	require.NoError(t, err)
	defer e.Close()
	if e.Model().Group().Device(0).NumSMs() < 2 {
		t.Skip("one SM: every kernel is one block")
	}
	rec := &gridRecorder{grids: map[string]int{}}
	e.Model().Group().Node().SetTracer(rec)
	ids := make([]int32, 200)
	for i := range ids {
		ids[i] = int32(3 + 7*i)
	}
	_, err = e.Generate(context.Background(), Request{PromptIDs: ids, MaxTokens: 1}, func(Token) error { return nil })
	e.Model().Group().Node().SetTracer(nil)
	require.NoError(t, err)
	require.Greater(t, rec.grids["swiglu"], 1, "swiglu's grid for a 200-token prompt")
}
