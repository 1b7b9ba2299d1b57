//go:build !linux

package device

import (
	"errors"
	"os"
)

// errNoShareable is what memory shared between processes returns off Linux: it is built on
// memfd_create.
var errNoShareable = errors.New("memory shared between processes needs Linux (memfd_create)")

func newMapping(string, int) (*mapping, error)    { return nil, errNoShareable }
func openMapping(*os.File, int) (*mapping, error) { return nil, errNoShareable }
func (m *mapping) dup() (*os.File, error)         { return nil, errNoShareable }
func (m *mapping) release() error                 { return nil }
