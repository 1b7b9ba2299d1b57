package shmring

import (
	"fmt"
	"math"
)

// Config is the shape of a ring: every process that maps it reads the same one from its
// header.
type Config struct {
	// Readers is how many processes read every message (the ranks), at least 1.
	Readers int
	// Slots is how many chunks the ring holds (K); a writer runs up to K chunks ahead of
	// the slowest reader.
	Slots int
	// SlotBytes is the payload of one slot; a longer message is split over consecutive
	// slots. A multiple of 8.
	SlotBytes int
	// ReplyBytes is the largest reply a reader sends back. A multiple of 8.
	ReplyBytes int
	// MaxMessage is the largest message Send takes, in bytes: a reader refuses a length
	// above it as a corrupt ring instead of allocating it.
	MaxMessage int
}

// wordsPerLine is a cache line in 64-bit words: words that different processes write sit
// on lines of their own.
const wordsPerLine = 8

// maxDim bounds each dimension so that Words cannot overflow.
const maxDim = 1 << 30

// Validate names the first field out of range.
func (c Config) Validate() error {
	switch {
	case c.Readers < 1 || c.Readers > 1<<16:
		return fmt.Errorf("shmring: %d readers, want 1 to 65536", c.Readers)
	case c.Slots < 1 || c.Slots > 1<<16:
		return fmt.Errorf("shmring: %d slots, want 1 to 65536", c.Slots)
	case c.SlotBytes < 8 || c.SlotBytes > maxDim || c.SlotBytes%8 != 0:
		return fmt.Errorf("shmring: slot of %d bytes, want a multiple of 8 from 8 to %d", c.SlotBytes, maxDim)
	case c.ReplyBytes < 0 || c.ReplyBytes > maxDim || c.ReplyBytes%8 != 0:
		return fmt.Errorf("shmring: reply of %d bytes, want a multiple of 8 from 0 to %d", c.ReplyBytes, maxDim)
	case c.MaxMessage < 0 || c.MaxMessage > math.MaxUint32:
		return fmt.Errorf("shmring: largest message of %d bytes, want 0 to %d", c.MaxMessage, uint32(math.MaxUint32))
	}
	return nil
}

// The header's words, in the first line.
const (
	hMagic = iota
	hReaders
	hSlots
	hSlotBytes
	hReplyBytes
	hMaxMessage
)

// magic marks a formatted ring (and this layout's version).
const magic = 0x676e_6972_6d68_7301 // "shmring" and version 1

// Lines before the per-reader lines: the header, the writer's bell, the readers' bell.
const (
	lineWriterBell  = 1
	lineReadersBell = 2
	lineFirstReader = 3
)

// The words of reader r's line.
const (
	rReleased = iota // chunks reader r released (written by r)
	rReply           // the message number of r's last reply (written by r)
	rTaken           // the message number of r's reply the writer took (written by the writer)
)

// slotWords is one slot: its sequence and length words and the payload, in whole lines.
func (c Config) slotWords() int { return roundLine(2 + c.SlotBytes/8) }

// replyWords is one reply slot: its length word and the payload, in whole lines.
func (c Config) replyWords() int { return roundLine(1 + c.ReplyBytes/8) }

func (c Config) firstSlot() int  { return (lineFirstReader + c.Readers) * wordsPerLine }
func (c Config) firstReply() int { return c.firstSlot() + c.Slots*c.slotWords() }

// Words is how many 64-bit words of shared memory the ring occupies.
func (c Config) Words() int { return c.firstReply() + c.Readers*c.replyWords() }

func roundLine(words int) int { return (words + wordsPerLine - 1) / wordsPerLine * wordsPerLine }

// chunks is how many slots a message of n bytes takes: at least one, so that an empty
// message is still a message.
func (c Config) chunks(n int) uint64 { return uint64(max(1, (n+c.SlotBytes-1)/c.SlotBytes)) }
