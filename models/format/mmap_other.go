//go:build !unix

package format

import "os"

// mapFile reads a whole file into memory where mmap is not available.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	data, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
