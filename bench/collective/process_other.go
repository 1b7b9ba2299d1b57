//go:build !linux

package collective

import (
	"context"
	"errors"
)

// MeasureProcesses refuses: worker processes need Linux (pidfds, SO_PEERCRED, memfds).
func MeasureProcesses(context.Context, Options) (*Report, error) {
	return nil, errors.New("--executor mp: worker processes run on Linux only")
}
