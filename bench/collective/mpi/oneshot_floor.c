/*
 * The floor under a 1 KiB all-reduce between two processes: what the cores' cache-line
 * crossings alone cost, with no runtime around them. Two processes pinned to CPUs 0 and 1
 * share one anonymous mapping and run, back to back, the protocol of an alternating
 * one-shot at 2 ranks: "flag" only meets at a flag barrier; "pull" stages its input in its
 * own half, flags, and sums its peer's half; "push" writes its input into its peer's half,
 * flags, and sums its own; "flagfree" is the Lamport one-shot's protocol, no flag: it writes
 * its input into its peer's slot of three, clears its own slot of the last call to -0.0,
 * and polls its slot until no word is -0.0. allreduce-bench and Open MPI are read against it
 * (docs/benchmarks/processes.md, eighth session). Not built by make:
 *
 *   cc -O2 -mavx2 -o /tmp/oneshot-floor bench/collective/mpi/oneshot_floor.c
 *   /tmp/oneshot-floor 1000000
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { COUNT = 256 }; /* 1 KiB of f32 */

struct shared {
	_Alignas(64) atomic_uint flag[2][16];    /* flag[r][p]: written by p, polled by r */
	_Alignas(64) float half[2][2][COUNT];    /* half[owner][parity] */
	_Alignas(64) _Atomic unsigned ff[2][3][COUNT]; /* ff[owner][phase]: flag-free slots, written by the peer */
};

static double now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
	long calls = argc > 1 ? atol(argv[1]) : 1000000;
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(s, 0, sizeof *s);
	for (int o = 0; o < 2; o++)
		for (int p = 0; p < 3; p++)
			for (int i = 0; i < COUNT; i++)
				s->ff[o][p][i] = 0x80000000u;
	int r = fork() == 0, peer = 1 - r;
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(r, &cpus);
	if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	float in[COUNT], out[COUNT];
	for (int i = 0; i < COUNT; i++)
		in[i] = r + i;
	const char *modes[] = {"flag", "pull", "push", "flagfree"};
	unsigned v = 0;
	for (int mode = 0; mode < 4; mode++) {
		double t0 = now_ns();
		for (long c = 0; c < calls; c++) {
			v++;
			if (mode == 3) {
				int ph = c % 3;
				_Atomic unsigned *dst = s->ff[peer][ph], *own = s->ff[r][ph], *prev = s->ff[r][(ph + 2) % 3];
				for (int i = 0; i < COUNT; i++) {
					unsigned b;
					memcpy(&b, &in[i], 4);
					atomic_store_explicit(&dst[i], b == 0x80000000u ? 0 : b, memory_order_relaxed);
				}
				for (int i = 0; i < COUNT; i++)
					atomic_store_explicit(&prev[i], 0x80000000u, memory_order_relaxed);
				for (int i = 0; i < COUNT; i++) {
					unsigned b;
					while ((b = atomic_load_explicit(&own[i], memory_order_acquire)) == 0x80000000u)
						;
					float x;
					memcpy(&x, &b, 4);
					out[i] = r == 0 ? in[i] + x : x + in[i];
				}
				continue;
			}
			int par = v & 1;
			if (mode == 1)
				memcpy(s->half[r][par], in, sizeof in);
			else if (mode == 2)
				memcpy(s->half[peer][par], in, sizeof in);
			atomic_store_explicit(&s->flag[peer][r], v, memory_order_release);
			while (atomic_load_explicit(&s->flag[r][peer], memory_order_acquire) < v)
				;
			const float *a = mode == 1 ? s->half[0][par] : s->half[r][par];
			const float *b = mode == 1 ? s->half[1][par] : s->half[r][par];
			if (mode == 1)
				for (int i = 0; i < COUNT; i++)
					out[i] = a[i] + b[i];
			else if (mode == 2)
				for (int i = 0; i < COUNT; i++)
					out[i] = r == 0 ? in[i] + a[i] : a[i] + in[i];
		}
		if (r == 0)
			printf("%s %.0f ns a call\n", modes[mode], (now_ns() - t0) / calls);
	}
	if (r == 0)
		wait(NULL);
	return out[1] > 1e30f;
}
