package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseIntList reads a comma-separated list of integers in [lo, hi] for flag name, such
// as --tp 1,2,4,8; the error names the flag and the bad entry.
func parseIntList(name, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("--%s %q: %q is not an integer from %d to %d", name, s, f, lo, hi)
		}
		out = append(out, v)
	}
	return out, nil
}
