/* libFuzzer: what `vmm bench merge` trusts least, a shard's results.json
 * from another host (vmm/bench/fleet/load.c over jansson). The input is
 * the file; it is read, its options rebuilt through bench_parse, its
 * matrix built and its runs staged, as the merge does. A file is refused
 * with a reason or taken; either way nothing leaks or crashes, and what is
 * staged lies inside the matrix it claims. */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm/bench/fleet/fleet.h"
#include "vmm/bench/matrix/matrix.h"

static char path[64];

static int write_input(const uint8_t *data, size_t size)
{
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_bench_load.%d.json", (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	return off == size ? 0 : -1;
}

static void stage_and_free(struct bench_shard_file *f)
{
	char err[256] = "";
	struct bench_opts o;
	if (bench_load_opts(f, &o, err, sizeof(err))) {
		if (!err[0])
			abort(); /* a refusal always says why */
		return;
	}
	struct bench_matrix m;
	if (bench_matrix_build(&o, &m, err, sizeof(err)))
		return;
	size_t nstage = (size_t)m.n * o.reps + 1;
	struct bench_run *stage = calloc(nstage, sizeof(*stage));
	struct bench_micro mi;
	memset(&mi, 0, sizeof(mi));
	if (stage && bench_load_runs(f, &o, &m, stage, &mi, err, sizeof(err)) == 0) {
		for (unsigned k = 0; k < f->nunits; k++) {
			const struct bench_unit *u = &f->units[k];
			if (u->rep >= o.reps || (u->cell != BENCH_UNIT_MICRO && (u->cell < 0 || (unsigned)u->cell >= m.n)))
				abort(); /* a unit outside the matrix was taken */
		}
	}
	for (size_t i = 0; stage && i < nstage; i++) {
		free(stage[i].vm_ops);
		free(stage[i].vm_start_ns);
	}
	free(stage);
	bench_matrix_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (write_input(data, size))
		return 0;
	struct bench_shard_file *f = calloc(1, sizeof(*f));
	char err[256] = "";
	if (!f)
		return 0;
	if (bench_load_file(path, f, err, sizeof(err)) == 0)
		stage_and_free(f);
	else if (!err[0])
		abort();
	bench_load_free(f);
	free(f);
	return 0;
}
