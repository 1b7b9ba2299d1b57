//go:build !linux

package engine

import (
	"errors"

	"github.com/tpslice/tpslice/models"
)

// launchRanks needs Linux's worker processes (package executor).
func launchRanks(Config, models.Config, [][]int, bool) (Model, Graphs, error) {
	return nil, Graphs{}, errors.New("engine: worker processes (--executor mp) need Linux")
}
