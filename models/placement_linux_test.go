package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/tp"
)

// affinityRecorder is a source that records the CPUs of the thread of each of its reads.
type affinityRecorder struct {
	format.Source
	mu   sync.Mutex
	cpus map[string]bool // each read's thread's CPUs, as "[0]"
}

func (s *affinityRecorder) Read(name string, r format.Region, dst format.Dest) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return err
	}
	var cpus []int
	for c := range device.MaxCPUs {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	s.mu.Lock()
	s.cpus[fmt.Sprint(cpus)] = true
	s.mu.Unlock()
	return s.Source.Read(name, r, dst)
}

// TestWeightsFirstTouchedOnRankCPUs: every rank reads (and so writes, first) its weights on
// a thread pinned to its CPUs, where the group has them: the first two CPUs this process
// may use, a rank each.
func TestWeightsFirstTouchedOnRankCPUs(t *testing.T) {
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	var allowed []int
	for c := range device.MaxCPUs {
		if set.IsSet(c) {
			allowed = append(allowed, c)
		}
	}
	if len(allowed) < 2 {
		t.Skipf("pinning two ranks a CPU each needs two allowed CPUs, have %v", allowed)
	}
	cfg, err := models.Preset("tiny")
	require.NoError(t, err)
	dummy, err := models.NewDummy(cfg, 1)
	require.NoError(t, err)
	src := &affinityRecorder{Source: dummy, cpus: map[string]bool{}}
	g, err := tp.NewGroup(tp.GroupConfig{World: 2, SMs: 1, CPUs: [][]int{{allowed[0]}, {allowed[1]}}})
	if errors.Is(err, unix.EPERM) {
		t.Skipf("sched_setaffinity refused: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	m, err := models.NewLlama(g, cfg, src, models.LlamaOptions{})
	require.NoError(t, err)
	m.Close()
	require.Equal(t, map[string]bool{fmt.Sprint(allowed[:1]): true, fmt.Sprint(allowed[1:2]): true}, src.cpus)
}
