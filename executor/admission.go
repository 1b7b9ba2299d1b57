//go:build linux

package executor

import (
	"encoding/binary"
	"fmt"

	"github.com/tpslice/tpslice/internal/ipc"
)

// The kinds of the handshake's messages (ipc leaves kinds from 16 up to the protocols
// above it). A worker sends kindHello; the driver answers kindWelcome and the ring's
// handle (ipc.KindHandle), or kindRefused with the reason.
const (
	kindHello uint32 = 16 + iota
	kindWelcome
	kindRefused
)

// hello is a worker's handshake: the rank and world size it was started with.
type hello struct{ rank, world int }

func (h hello) message() ipc.Message {
	b := binary.LittleEndian.AppendUint32(nil, uint32(h.rank))
	return ipc.Message{Kind: kindHello, Body: binary.LittleEndian.AppendUint32(b, uint32(h.world))}
}

func parseHello(m ipc.Message, pid int) (hello, error) {
	if m.Kind != kindHello || len(m.Body) != 8 || len(m.Files) != 0 {
		return hello{}, fmt.Errorf("pid %d: first message of kind %d, %d bytes, %d files; want a handshake (kind %d, 8 bytes)", pid, m.Kind, len(m.Body), len(m.Files), kindHello)
	}
	return hello{rank: int(int32(binary.LittleEndian.Uint32(m.Body))), world: int(binary.LittleEndian.Uint32(m.Body[4:]))}, nil
}

// admission is the driver's record of who may join: the rank each child was started as,
// and who joined already.
type admission struct {
	world  int
	rankOf map[int]int // pid → the rank Launch started it as
	joined map[int]int // rank → the pid that joined as it
}

func newAdmission(world int) *admission {
	return &admission{world: world, rankOf: map[int]int{}, joined: map[int]int{}}
}

// admit checks a handshake from pid, whose uid and parentage ipc.Listener checked: it must
// be a worker started as h.rank, in a world of the size Launch started, joining once.
func (a *admission) admit(pid int, h hello) error {
	started, ok := a.rankOf[pid]
	switch {
	case !ok:
		return fmt.Errorf("pid %d, which says it is rank %d, is not a worker this driver started", pid, h.rank)
	case h.world != a.world:
		return fmt.Errorf("pid %d (rank %d) says the world has %d workers, the driver started %d", pid, started, h.world, a.world)
	case h.rank != started:
		return fmt.Errorf("pid %d, started as rank %d, says it is rank %d", pid, started, h.rank)
	}
	if prev, dup := a.joined[h.rank]; dup {
		return fmt.Errorf("pid %d (rank %d) joined already as pid %d: a second connection is refused", pid, h.rank, prev)
	}
	a.joined[h.rank] = pid
	return nil
}
