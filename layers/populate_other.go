//go:build !linux

package layers

import "os"

// populate writes each page of s once (touchPages): the pages fault in now instead of in
// the steps that first write them. s must be freshly made (zeroed).
func populate[T float32 | uint16](s []T) { touchPages(s, os.Getpagesize()) }
