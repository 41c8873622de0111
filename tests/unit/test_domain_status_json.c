/*
 * `vmm domain status --json` as the agent answers it (agent_status over a
 * socketpair, no agent loop), for a fixed domain: two slots, one member of
 * three vCPUs with a reported policy and odd names, against
 * tests/unit/data/domain_status_golden.json, which the old hand-rolled
 * writer (lib/json_writer) wrote for the same domain (with the agent
 * guard's counts added since, issue 31). agent_pid and
 * uptime_ns are this process's and this moment's: compared by type only.
 * `test_domain_status_json --write-golden FILE` writes the answer.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/json_compare.h"
#include "vmm/domain/agent_int.h"

#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL)

/* The answer's text (malloc'd), or NULL. */
static char *status_json(void)
{
	static struct dom_agent_opts o = { .name = "lab \"one\"", .nslots = 2, .slot_cpu = { 3, 5 } };
	struct dom_params p = { .nslots = 2, .max_members = 2, .slice_ns = 4000000, .grace_ns = 1000000 };
	const char *why = NULL;
	struct agent a;
	memset(&a, 0, sizeof(a));
	a.o = &o;
	a.core = dom_core_create(&p, &why);
	a.max_members = 2;
	a.mem = calloc(2, sizeof(*a.mem));
	a.conn = calloc(1, sizeof(*a.conn));
	a.refused = 4;
	int sv[2] = { -1, -1 };
	char *text = NULL;
	if (!a.core || !a.mem || !a.conn || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		goto out;
	a.conn[0].fd = sv[0];
	int m = dom_core_join(a.core, 300, 3, 0, 1000);
	if (m != 0)
		goto out;
	struct agent_member *am = &a.mem[0];
	am->conn = 0;
	am->pid = 4242;
	am->nseats = 2;
	am->nvcpus = 3;
	snprintf(am->vm_name, sizeof(am->vm_name), "vm\\1\t");
	am->bad_words = 7;
	am->gave_back = 3;
	am->gave_back_ns = 3000;
	am->gave_back_max_ns = 2500;
	am->weight_set_ns = 123456789;
	a.mem[1].conn = -1;
	if (dom_shm_create(&am->shm, 2, 3, 1))
		goto out;
	struct dom_grant_live *live = dom_shm_live(&am->shm);
	snprintf(live->policy, sizeof(live->policy), "directed");
	live->policy_gen = 2;
	/* the member's side writes req: map it as the member does */
	struct dom_shm mine;
	memset(&mine, 0, sizeof(mine));
	if (dom_shm_attach(&mine, dup(am->shm.req_fd), dup(am->shm.grant_fd), 2, 3, 1)) {
		dom_shm_destroy(&am->shm);
		goto out;
	}
	dom_shm_req_hdr(&mine)->policy_ack = 1; /* not applied yet */
	for (int i = 0; i < 3; i++) {
		dom_shm_req_vcpu(&mine, i)->state = (uint32_t)i;
		dom_shm_req_vcpu(&mine, i)->ns_running = 1000000ull * (uint64_t)(i + 1);
	}
	dom_shm_destroy(&mine);
	agent_status(&a, 0, DOM_STATUS_JSON);
	size_t cap = sizeof(struct dom_msg_hdr) + DOM_TEXT_MAX + 1;
	char *buf = calloc(1, cap + 1);
	ssize_t n = buf ? recv(sv[1], buf, cap, 0) : -1;
	if (n > (ssize_t)sizeof(struct dom_msg_hdr))
		text = strdup(buf + sizeof(struct dom_msg_hdr));
	free(buf);
	dom_shm_destroy(&am->shm);
out:
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	free(a.mem);
	free(a.conn);
	if (a.core)
		dom_core_destroy(a.core);
	return text;
}

/* This process's and this moment's values, the same in both before comparing. */
static void settle(json_t *j)
{
	CHECK(json_is_number(json_object_get(j, "agent_pid")));
	CHECK(json_is_number(json_object_get(j, "uptime_ns")));
	json_object_set_new(j, "agent_pid", json_real(1));
	json_object_set_new(j, "uptime_ns", json_real(1));
}

static void test_matches_golden(void)
{
	char golden[PATH_MAX + 64];
	json_test_data_path(golden, sizeof(golden), "domain_status_golden.json");
	char *now_text = status_json();
	CHECK(now_text != NULL);
	json_error_t e;
	json_t *old = json_load_file(golden, LOAD_FLAGS, &e);
	if (!old)
		fprintf(stderr, "%s:%d: %s\n", golden, e.line, e.text);
	json_t *now = now_text ? json_loads(now_text, LOAD_FLAGS, &e) : NULL;
	CHECK(old && now);
	if (old && now) {
		settle(old);
		settle(now);
		char where[512];
		int d = json_compare(old, now, where, sizeof(where));
		if (d)
			fprintf(stderr, "first difference at %s\n%s", where, now_text);
		CHECK_EQ(d, 0);
		CHECK_EQ(json_array_size(json_object_get(now, "members")), 1);
		CHECK_EQ(json_array_size(json_object_get(now, "slots")), 2);
	}
	/* numbers: the same kinds in the same order, integers the same digits (but pid and uptime) */
	FILE *f = fopen(golden, "r");
	char *gtext = calloc(1, 1 << 16);
	if (f && gtext && now_text) {
		size_t got = fread(gtext, 1, (1 << 16) - 1, f);
		(void)got;
		static char ka[200][32], kb[200][32];
		unsigned na = json_number_kinds(gtext, ka, 200), nb = json_number_kinds(now_text, kb, 200);
		CHECK(na > 20);
		CHECK_EQ(na, nb);
		for (unsigned i = 2; i < na && i < nb && i < 200; i++) {
			if (strcmp(ka[i], kb[i]))
				fprintf(stderr, "number %u: %s, now %s\n", i, ka[i], kb[i]);
			CHECK(!strcmp(ka[i], kb[i]));
		}
	}
	if (f)
		fclose(f);
	free(gtext);
	json_decref(old);
	json_decref(now);
	free(now_text);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-golden")) {
		char *text = status_json();
		FILE *f = text ? fopen(argv[2], "w") : NULL;
		if (f) {
			fputs(text, f);
			fclose(f);
		}
		free(text);
		return f ? 0 : 1;
	}
	RUN(test_matches_golden);
	return check_summary();
}
