package comm

import (
	"fmt"
	"os"
)

// forcedProto is the protocol the configuration or $TPSLICE_PROTO forces, or ProtoAuto.
func forcedProto(cfg Proto) (Proto, error) {
	if cfg != ProtoAuto {
		if cfg > Simple {
			return 0, fmt.Errorf("comm: Config.Proto: unknown protocol %v", cfg)
		}
		return cfg, nil
	}
	env := os.Getenv(EnvProto)
	if env == "" {
		return ProtoAuto, nil
	}
	p, err := ParseProto(env)
	if err != nil {
		return 0, fmt.Errorf("comm: $%s: %w", EnvProto, err)
	}
	return p, nil
}

// PickProto returns the protocol an all-reduce of the given size runs with algorithm a:
// ProtoAuto for an algorithm that takes none; else the forced one (Config.Proto,
// $TPSLICE_PROTO), the table's where its row for the size chose a with a protocol, or
// Simple, what the ring and the tree ran before protocols were a choice. (On this runtime
// the ring under LL128 beats Simple below about 16 KiB, docs/benchmarks/collectives.md
// "Protocols": the autotuned table picks that up; perf's model table prices the protocols
// for a GPU.)
func (c *Communicator) PickProto(a Algo, bytes int) Proto {
	switch {
	case !TakesProto(a):
		return ProtoAuto
	case c.proto != ProtoAuto:
		return c.proto
	}
	if t := c.table.Load(); t != nil {
		if ch, ok := t.Pick(c.n, int64(bytes)); ok && ch.Algo == a && ch.Proto != ProtoAuto {
			return ch.Proto
		}
	}
	return Simple
}
