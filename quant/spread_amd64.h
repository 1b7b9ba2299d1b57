// Shared by the grouped kernels of both instruction sets (dot_group_*_amd64.s).

// Spread lockstep: a call's first W·c groups (W the lockstep width, c = groups/W) are
// read as c runs, run i taking groups i, c+i, …, (W-1)·c+i; the rest one at a time. Each
// of the W streams then reads c groups one after another, however short a group is: runs
// of adjacent groups gave a TP 8 shard's o_proj (8 blocks a row, a group 2.3 KiB) 0.6×
// the cpuGB/s of long rows, the streams restarting every group (docs/benchmarks/quantized.md,
// "TP 8's shards").
// The groups are independent, so the order changes no bits. SPREAD(SHIFT) sets it up for
// W = 1<<SHIFT: AX = c times a group's bytes (AX before), R15 = c·64 (the runs' outputs
// are R15 apart); SPREADEND(W), after the runs, steps SI and DI past the W·c groups.
#define SPREAD(SHIFT) \
	MOVQ  CX, R15; \
	SHRQ  $SHIFT, R15; \
	IMULQ R15, AX; \
	SHLQ  $6, R15

#define SPREADEND(W) \
	IMUL3Q $(W-1), AX, R10; \
	ADDQ   R10, SI; \
	IMUL3Q $(W-1), R15, R10; \
	ADDQ   R10, DI
