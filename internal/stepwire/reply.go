package stepwire

import (
	"encoding/binary"
	"fmt"
)

// Reply is what a rank sends back for a step: the ids it sampled, one per sampled row, or
// the error that ended its step.
type Reply struct {
	// Number is the step's.
	Number uint64
	// IDs are the sampled tokens, in the order of the step's sampled rows.
	IDs []int32
	// Err is the rank's error ("" for none).
	Err string
}

const replyMagic = "RPL1"

// AppendBinary appends r in the wire format to b (encoding.BinaryAppender).
func (r Reply) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, replyMagic...)
	b = binary.LittleEndian.AppendUint64(b, r.Number)
	b = appendI32s(appendU32(b, len(r.IDs)), r.IDs)
	return append(appendU32(b, len(r.Err)), r.Err...), nil
}

// UnmarshalBinary reads a reply AppendBinary wrote.
func (r *Reply) UnmarshalBinary(b []byte) error {
	d := reader{b: b}
	if magic := string(d.bytes("magic", 4)); d.err == nil && magic != replyMagic {
		return fmt.Errorf("stepwire: not a reply: magic %q, want %q", magic, replyMagic)
	}
	var rp Reply
	rp.Number = d.u64("number")
	rp.IDs = d.i32s("ids", d.count("ids", 4))
	rp.Err = string(d.bytes("error", d.count("error", 1)))
	if err := d.done(); err != nil {
		return fmt.Errorf("stepwire: reply: %w", err)
	}
	*r = rp
	return nil
}
