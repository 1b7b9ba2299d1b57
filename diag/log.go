package diag

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// Level orders how much is logged.
type Level int

// The levels, in NCCL_DEBUG's names and order.
const (
	Warn Level = iota + 1
	Info
	Trace
)

func (l Level) String() string {
	switch l {
	case Warn:
		return "WARN"
	case Info:
		return "INFO"
	case Trace:
		return "TRACE"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Subsys is a part of the system a line is about.
type Subsys string

// The subsystems.
const (
	Init   Subsys = "INIT"   // topology, devices, the model loaded
	Tuning Subsys = "TUNING" // the all-reduce selector's choice per message size
	Graph  Subsys = "GRAPH"  // decode graphs captured per batch bucket
	Coll   Subsys = "COLL"   // the algorithm of each collective call site
	Fault  Subsys = "FAULT"  // failures, with the flight recorder's last calls
)

// subsystems lists every subsystem, in the order the docs give them.
var subsystems = []Subsys{Init, Tuning, Graph, Coll, Fault}

// The environment variables FromEnv reads.
const (
	EnvLevel  = "TPSLICE_DEBUG"
	EnvSubsys = "TPSLICE_DEBUG_SUBSYS"
)

// Logger writes lines of the enabled level and subsystems; safe for concurrent use.
type Logger struct {
	level  Level
	subsys map[Subsys]bool
	prefix string

	mu  sync.Mutex
	out io.Writer
}

// New returns a logger of level and subsystems (none: every subsystem) writing to out.
func New(out io.Writer, level Level, subsys ...Subsys) *Logger {
	if len(subsys) == 0 {
		subsys = subsystems
	}
	l := &Logger{level: level, subsys: map[Subsys]bool{}, out: out, prefix: fmt.Sprintf("tpslice:%d", os.Getpid())}
	for _, s := range subsys {
		l.subsys[s] = true
	}
	return l
}

// FromEnv reads TPSLICE_DEBUG and TPSLICE_DEBUG_SUBSYS through getenv (os.Getenv): nil, no
// logger, when TPSLICE_DEBUG is unset or empty; an error naming the variable and the value
// when either is not one of the documented values.
func FromEnv(getenv func(string) string, out io.Writer) (*Logger, error) {
	v := strings.ToUpper(strings.TrimSpace(getenv(EnvLevel)))
	if v == "" {
		return nil, nil
	}
	level := Level(0)
	for _, l := range []Level{Warn, Info, Trace} {
		if v == l.String() {
			level = l
		}
	}
	if level == 0 {
		return nil, fmt.Errorf("%s=%q: want WARN, INFO or TRACE", EnvLevel, getenv(EnvLevel))
	}
	subsys, err := parseSubsys(getenv(EnvSubsys))
	if err != nil {
		return nil, err
	}
	return New(out, level, subsys...), nil
}

// parseSubsys reads a comma-separated list of subsystems; "" and ALL mean all, a leading ^
// all but those listed.
func parseSubsys(v string) ([]Subsys, error) {
	v = strings.ToUpper(strings.TrimSpace(v))
	invert := strings.HasPrefix(v, "^")
	v = strings.TrimPrefix(v, "^")
	if v == "" || v == "ALL" {
		if invert {
			return nil, fmt.Errorf("%s=%q: ^ALL leaves nothing to log", EnvSubsys, "^"+v)
		}
		return subsystems, nil
	}
	var listed []Subsys
	for _, name := range strings.Split(v, ",") {
		s := Subsys(strings.TrimSpace(name))
		if !slices.Contains(subsystems, s) {
			return nil, fmt.Errorf("%s: unknown subsystem %q: want INIT, TUNING, GRAPH, COLL, FAULT or ALL", EnvSubsys, name)
		}
		listed = append(listed, s)
	}
	if !invert {
		return listed, nil
	}
	var rest []Subsys
	for _, s := range subsystems {
		if !slices.Contains(listed, s) {
			rest = append(rest, s)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%s=%q leaves nothing to log", EnvSubsys, "^"+v)
	}
	return rest, nil
}

// Enabled says whether lines of level and subsystem s are written; false on a nil logger.
func (l *Logger) Enabled(level Level, s Subsys) bool {
	return l != nil && level <= l.level && l.subsys[s]
}

// Logf writes one line, "tpslice:PID LEVEL SUBSYS message", when it is enabled.
func (l *Logger) Logf(level Level, s Subsys, format string, args ...any) {
	if !l.Enabled(level, s) {
		return
	}
	line := fmt.Sprintf("%s %v %s %s", l.prefix, level, s, fmt.Sprintf(format, args...))
	line = strings.TrimRight(line, "\n") + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.out, line)
}

// Infof is Logf at Info.
func (l *Logger) Infof(s Subsys, format string, args ...any) { l.Logf(Info, s, format, args...) }

// Warnf is Logf at Warn.
func (l *Logger) Warnf(s Subsys, format string, args ...any) { l.Logf(Warn, s, format, args...) }
