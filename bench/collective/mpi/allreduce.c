/*
 * The peer allreduce-bench --executor mp is measured against: Open MPI's shared-memory
 * all-reduce (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM), timed as nccl-tests and allreduce-bench
 * time it: warm-up calls, then a timed loop, the time per call the slowest rank's (an
 * MPI_Reduce of the ranks' times with MPI_MAX). Best of ROUNDS rounds per size, sizes per
 * rank from 1 KiB to 4 MiB by 4. Not built by make; see docs/benchmarks/processes.md:
 *
 *   apt-get install -y libopenmpi-dev openmpi-bin
 *   mpicc -O2 -o /tmp/mpi-allreduce bench/collective/mpi/allreduce.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi-allreduce
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { WARMUP = 20, ROUNDS = 20, MIN_ITERS = 10 };
static const double TARGET = 1e-3; /* seconds of calls per round, at least */

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	float *buf = malloc(4 << 20);
	if (rank == 0)
		printf("# Open MPI MPI_Allreduce, %d ranks, f32 sum in place; time in us (best of %d rounds, slowest rank)\n# size count time algbw busbw\n", n, ROUNDS);
	for (long size = 1 << 10; size <= 4 << 20; size *= 4) {
		int count = (int)(size / sizeof(float));
		for (int i = 0; i < count; i++)
			buf[i] = (float)(rank + i % 7);
		for (int i = 0; i < WARMUP; i++)
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double best = 1e30;
		int iters = MIN_ITERS;
		for (int r = 0; r < ROUNDS; r++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			for (int i = 0; i < iters; i++)
				MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			double mine = (MPI_Wtime() - t0) / iters, slowest;
			MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			MPI_Bcast(&slowest, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			if (slowest < best)
				best = slowest;
			if (slowest * iters < TARGET) /* every rank grows alike: slowest is shared */
				iters = (int)(TARGET / slowest) + 1;
		}
		if (rank == 0) {
			double algbw = size / best / 1e9;
			printf("%8ld %8d %10.2f %8.2f %8.2f\n", size, count, best * 1e6, algbw, algbw * 2 * (n - 1) / n);
		}
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
