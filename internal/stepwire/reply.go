package stepwire

import (
	"encoding/binary"
	"fmt"
)

// Reply is what a rank sends back for a step: its rows of what the step gathered (its
// candidates or logits shard and their terms, models.Llama.RankRows), ids, or the error
// that ended its step.
type Reply struct {
	// Number is the step's.
	Number uint64
	// Bucket is the batch size of the decode graph the rank replayed (0: it ran eagerly).
	Bucket int
	// IDs are ids a job answers with (the ping job's digest).
	IDs []int32
	// Rows are the rank's rows of the step's gathered result.
	Rows []float32
	// Err is the rank's error ("" for none).
	Err string
}

const replyMagic = "RPL2"

// AppendBinary appends r in the wire format to b (encoding.BinaryAppender).
func (r Reply) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, replyMagic...)
	b = binary.LittleEndian.AppendUint64(b, r.Number)
	b = appendU32(b, r.Bucket)
	b = appendI32s(appendU32(b, len(r.IDs)), r.IDs)
	b = appendF32(appendU32(b, len(r.Rows)), r.Rows...)
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
	rp.Bucket = d.int("bucket")
	rp.IDs = d.i32s("ids", d.count("ids", 4))
	rp.Rows = d.f32s("rows", d.count("rows", 4))
	rp.Err = string(d.bytes("error", d.count("error", 1)))
	if err := d.done(); err != nil {
		return fmt.Errorf("stepwire: reply: %w", err)
	}
	*r = rp
	return nil
}
