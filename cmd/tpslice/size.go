package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeFlag is a byte count written as nccl-tests writes them: 8, 64K, 1M, 2G (powers of
// 1024; a trailing B is allowed).
type sizeFlag int64

func (s *sizeFlag) String() string { return formatSize(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func parseSize(v string) (int64, error) {
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(v)), "B")
	shift := 0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
	}
	if shift > 0 {
		t = t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<40)>>shift {
		return 0, fmt.Errorf("bad size %q (want a byte count such as 8, 64K, 1M or 2G)", v)
	}
	return n << shift, nil
}

func formatSize(n int64) string {
	for _, u := range []struct {
		shift int
		unit  string
	}{{30, "G"}, {20, "M"}, {10, "K"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.unit)
		}
	}
	return strconv.FormatInt(n, 10)
}
