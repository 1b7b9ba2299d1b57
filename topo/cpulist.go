package topo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpslice/tpslice/device"
)

// CPUList is a set of CPU ids in ascending order, without repeats.
type CPUList []int

// ParseCPUList reads the kernel's list syntax, as sysfs writes it and taskset -c takes it:
// comma-separated CPU ids and inclusive ranges ("0-3,8-11"); an empty or blank list is the
// empty set. An error quotes the list and names the bad entry.
func ParseCPUList(s string) (CPUList, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out CPUList
	for entry := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(entry), "-")
		first, err := cpuID(lo)
		last := first
		if err == nil && isRange {
			last, err = cpuID(hi)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("CPU list %q: entry %q: %w", s, entry, err)
		case last < first:
			return nil, fmt.Errorf("CPU list %q: range %q ends before it starts", s, entry)
		}
		for c := first; c <= last; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// cpuID reads one CPU id in [0, device.MaxCPUs): what a CPU set holds.
func cpuID(s string) (int, error) {
	c, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a CPU id", s)
	case c < 0 || c >= device.MaxCPUs:
		return 0, fmt.Errorf("CPU %d is outside 0-%d, what a CPU set holds", c, device.MaxCPUs-1)
	}
	return c, nil
}

// String writes the list in the kernel's syntax, runs of consecutive ids as ranges
// ("0-3,8-11"); the empty list is "".
func (l CPUList) String() string {
	var b strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(l[i]))
		if j > i {
			fmt.Fprintf(&b, "-%d", l[j])
		}
		i = j + 1
	}
	return b.String()
}

// Intersect returns the CPUs in both l and m.
func (l CPUList) Intersect(m CPUList) CPUList {
	var out CPUList
	for _, c := range l {
		if _, ok := slices.BinarySearch(m, c); ok {
			out = append(out, c)
		}
	}
	return out
}

// Without returns the CPUs of l that are not in m.
func (l CPUList) Without(m CPUList) CPUList {
	var out CPUList
	for _, c := range l {
		if _, ok := slices.BinarySearch(m, c); !ok {
			out = append(out, c)
		}
	}
	return out
}
