package layers

import "unsafe"

// touchPages writes a zero into every page of s that holds one of its elements (page
// bytes a page), so that every page of a freshly made, zeroed s is mapped for this
// process's writes before a step's first write to it.
func touchPages[T float32 | uint16](s []T, page int) {
	if len(s) == 0 {
		return
	}
	size := int(unsafe.Sizeof(s[0]))
	first := (page - int(uintptr(unsafe.Pointer(&s[0])))%page) % page / size // the first element on a page boundary
	s[0] = 0                                                                 // the partial page before it
	for i := first; i < len(s); i += page / size {
		s[i] = 0
	}
}
