// Package stepwire is the binary form of what the driver sends the rank processes each step
// and what they send back: a Step (the forward pass's tokens, positions, block tables and
// sampled rows, the decode graph to replay, each sampled row's sampler: the logit
// adjustments and draw every rank applies to its vocabulary shard) and a Reply (a rank's
// rows of what the step gathered, or its error). They travel through the step ring
// (internal/shmring), so the format is flat, little-endian and length-prefixed, and
// decoding checks every count against the bytes left before it allocates: truncated or
// garbage input is an error that names the field, never a panic or a huge allocation.
//
// A Step, in order (u32 and i32 are 4 bytes, u64 8, f32 an IEEE-754 float's bits):
//
//	magic "STP2" | number u64 | bucket u32 | candidates u32 | flags u8 (1: logprobs, 2: Seq,
//	4: samplers)
//	tokens u32 | ids [tokens]i32 | positions [tokens]i32 | seq [tokens]i32 (flag 2)
//	tables u32 | per table: blocks u32, [blocks]i32
//	sampled u32 | rows [sampled]u32
//	per sampled row (flag 4): temperature f32 | flags u8 (1: draw, 2: terms) | seed, pos u64
//	| repetition f32 | adjusts u32, per adjust: token i32, bias f32, flags u8 (1: mask,
//	2: repeat), sub f32
//
// A Reply: magic "RPL2" | number u64 | bucket u32 | ids u32, [ids]i32 | rows u32, [rows]f32 | error u32,
// its bytes.
package stepwire
