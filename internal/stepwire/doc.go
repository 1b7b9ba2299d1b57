// Package stepwire is the binary form of what the driver sends the rank processes each step
// and what they send back: a Step (the forward pass's tokens, positions, block tables and
// sampled rows, the decode graph to replay, each sampled row's sampling parameters) and a
// Reply (a rank's sampled ids or its error). They travel through the step ring
// (internal/shmring), so the format is flat, little-endian and length-prefixed, and
// decoding checks every count against the bytes left before it allocates: truncated or
// garbage input is an error that names the field, never a panic or a huge allocation.
//
// A Step, in order (u32 and i32 are 4 bytes, u64 8, f32 an IEEE-754 float's bits):
//
//	magic "STP1" | number u64 | bucket u32 | candidates u32 | flags u8 (1: logprobs, 2: Seq)
//	tokens u32 | ids [tokens]i32 | positions [tokens]i32 | seq [tokens]i32 (flag 2)
//	tables u32 | per table: blocks u32, [blocks]i32
//	sampled u32 | rows [sampled]u32
//	per sampled row: temperature, top_p, repetition, frequency, presence f32 | top_k,
//	min_tokens, draw u32 | seed u64 | biases u32, per bias: token i32, value f32
//
// A Reply: magic "RPL1" | number u64 | ids u32, [ids]i32 | error u32, its bytes.
package stepwire
