/* libFuzzer: the bench's report reader (vmm/bench/exec/json.c: our path
 * lookup over jansson's parser) on the input as one document, then asked for
 * the paths the bench asks for and for paths cut from the input itself. A
 * document is refused or read; either way nothing leaks or crashes, and a
 * value read is of the kind asked for. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"

static const char *const paths[] = {
	"ops_per_s", "mutual_exclusion_ok", "vms.0.ops_per_s", "start_ns", "start_late_ns", "start_wait_ns",
	"domain.grants", "vcpus.0.reports.hc_ps", "sched.kick_latency_ns.p50", "a", "a.b", "0", "a.0.b",
	"", ".", "..", "a.", ".a", "4294967296", "a.99999999999",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct bench_json j;
	if (bench_json_parse(text, &j) == 0) {
		if (!j.root)
			abort();
		double v;
		bool b;
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			if (bench_json_num(&j, paths[i], &v) == 0 && isnan(v))
				abort(); /* JSON has no NaN: nothing may read as one */
			(void)bench_json_bool(&j, paths[i], &b);
		}
		/* every quoted run of the input as a path: keys the document really has */
		for (const char *q = strchr(text, '"'); q; q = strchr(q + 1, '"')) {
			const char *e = strchr(q + 1, '"');
			if (!e)
				break;
			char path[64];
			size_t n = (size_t)(e - q - 1) < sizeof(path) - 1 ? (size_t)(e - q - 1) : sizeof(path) - 1;
			memcpy(path, q + 1, n);
			path[n] = '\0';
			(void)bench_json_num(&j, path, &v);
			q = e;
		}
		bench_json_free(&j);
	} else if (j.root) {
		abort(); /* refused, yet holding a document */
	}
	free(text);
	return 0;
}
