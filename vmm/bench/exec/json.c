/*
 * Reads the JSON report a child `vmm run --json` wrote, so the bench can ask
 * for "ops_per_s" or "vcpus.0.reports.hc_ps" by path. Once shards from many
 * hosts are merged this is a trust boundary, so the parsing is jansson's
 * (strict RFC 8259, vmm/bench/README.md says why): duplicate keys, a NUL in
 * a string, a number out of a double's range, nesting past jansson's limit,
 * trailing text or a top level that is not an object are all -EINVAL.
 * Fields may be added to the report in any order or depth (README: later
 * versions only add fields) and the bench must not break.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/bench/exec/exec.h"
#include "vmm/host/file.h"

/*
 * Integers as doubles: the bench asks for doubles, and a report's u64
 * registers above INT64_MAX would otherwise be refused as too big.
 */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL)
#define FILE_MAX (64u << 20)

static int loaded(json_t *root, const json_error_t *e, struct bench_json *j)
{
	if (!root)
		return json_error_code(e) == json_error_out_of_memory ? -ENOMEM : -EINVAL;
	if (!json_is_object(root)) {
		json_decref(root);
		return -EINVAL;
	}
	j->root = root;
	return 0;
}

int bench_json_parse(const char *text, struct bench_json *j)
{
	json_error_t e;
	memset(j, 0, sizeof(*j));
	return loaded(json_loads(text, LOAD_FLAGS, &e), &e, j);
}

int bench_json_load(const char *path, struct bench_json *j)
{
	uint8_t *buf;
	size_t len;
	json_error_t e;
	memset(j, 0, sizeof(*j));
	int r = read_whole_file(path, FILE_MAX, &buf, &len);
	if (r)
		return r;
	/* json_loadb: a NUL byte in the file is an error, not the end of the text */
	r = loaded(json_loadb((const char *)buf, len, LOAD_FLAGS, &e), &e, j);
	free(buf);
	return r;
}

void bench_json_free(struct bench_json *j)
{
	json_decref(j->root);
	j->root = NULL;
}

/*
 * The value at a dotted path. A key may itself hold dots (a guest's report
 * keys may), so at each object every split of the path is tried, shortest
 * key first; array indices are plain decimal.
 */
static const json_t *at(const json_t *v, const char *path)
{
	if (!*path)
		return v;
	if (json_is_array(v)) {
		size_t n = strspn(path, "0123456789");
		if (!n || n > 9 || (path[n] && path[n] != '.'))
			return NULL;
		const json_t *e = json_array_get(v, strtoul(path, NULL, 10));
		return e ? at(e, path[n] ? path + n + 1 : path + n) : NULL;
	}
	if (!json_is_object(v))
		return NULL;
	for (const char *dot = path;; dot++) {
		if (*dot && *dot != '.')
			continue;
		const json_t *e = json_object_getn(v, path, (size_t)(dot - path));
		const json_t *found = e ? at(e, *dot ? dot + 1 : dot) : NULL;
		if (found || !*dot)
			return found;
	}
}

int bench_json_num(const struct bench_json *j, const char *key, double *out)
{
	const json_t *v = j->root ? at(j->root, key) : NULL;
	if (!v)
		return -ENOENT;
	if (!json_is_number(v))
		return -EINVAL;
	*out = json_number_value(v);
	return 0;
}

int bench_json_bool(const struct bench_json *j, const char *key, bool *out)
{
	const json_t *v = j->root ? at(j->root, key) : NULL;
	if (!v)
		return -ENOENT;
	if (!json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}
