/*
 * `vmm domain status` and `vmm domain set`, served by the agent: the books
 * (slots, members, shares) as text or JSON, and live changes of a member's
 * weight (the books, at once) and yield policy (the member applies it and
 * acknowledges in its req header; status shows both).
 */
#include "vmm/domain/agent_int.h"
#include "vmm/domain/agent_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/json_out.h"
#include "sched/types.h"

static const char *vstate_name(uint32_t s)
{
	static const char *const names[] = { "running", "runnable", "waiting", "idle", "done" };
	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static const char *seat_state(enum dom_vstate s)
{
	switch (s) {
	case DOM_V_BLOCKED: return "idle";
	case DOM_V_QUEUED: return "queued";
	case DOM_V_HOLDING: return "holding";
	case DOM_V_OVERRUN: return "overrun";
	case DOM_V_DONE: return "done";
	}
	return "?";
}

/* What the member says (display only; a member can only lie about itself). */
struct member_view {
	struct dom_member_stats st;
	uint32_t policy_ack, policy_gen;
	uint64_t policy_at;
	char policy[DOM_NAME_MAX];
};

static void view(struct agent *a, int m, uint64_t now, struct member_view *v)
{
	struct agent_member *am = &a->mem[m];
	memset(v, 0, sizeof(*v));
	dom_core_member_stats(a->core, m, now, &v->st);
	struct dom_grant_live *live = dom_shm_live(&am->shm);
	struct dom_req_hdr *rh = dom_shm_req_hdr(&am->shm);
	v->policy_gen = __atomic_load_n(&live->policy_gen, __ATOMIC_RELAXED);
	v->policy_ack = __atomic_load_n(&rh->policy_ack, __ATOMIC_RELAXED);
	v->policy_at = __atomic_load_n(&rh->policy_at_ns, __ATOMIC_RELAXED);
	snprintf(v->policy, sizeof(v->policy), "%s", live->policy);
}

static double share(const struct dom_member_stats *st, int nslots, uint64_t now)
{
	uint64_t span = now > st->joined_ns ? now - st->joined_ns : 0;
	return span ? (double)st->held_ns / ((double)span * nslots) : 0.0;
}

static int write_json(struct agent *a, FILE *f, uint64_t now)
{
	struct json_out out, *o = &out;
	json_t *top = json_out_begin(o);
	json_out_str(o, top, "domain", a->o->name);
	json_out_i64(o, top, "agent_pid", getpid());
	json_out_u64(o, top, "uptime_ns", now - a->start_ns);
	json_out_u64(o, top, "slice_ns", a->core->slice_ns);
	json_out_u64(o, top, "grace_ns", a->core->grace_ns);
	char conf[PATH_MAX + 64];
	json_out_str(o, top, "confinement", dom_confine_describe(&a->confine, conf, sizeof(conf)));
	json_out_u64(o, top, "refused", a->refused);
	json_t *guard = json_out_obj(o, top, "guard");
	json_out_u64(o, guard, "uid_conns", (uint64_t)a->uid_conns);
	json_out_u64(o, guard, "over_uid_conns", a->over_uid_conns);
	json_out_u64(o, guard, "timed_out", a->timed_out);
	json_out_u64(o, guard, "ejected_bells", a->ejected_bells);
	json_out_u64(o, guard, "ejected_words", a->ejected_words);
	json_t *slots = json_out_arr(o, top, "slots");
	for (int s = 0; s < a->core->nslots; s++) {
		const struct dom_slot *sl = &a->core->slot[s];
		json_t *slot = json_out_obj(o, slots, NULL);
		json_out_i64(o, slot, "slot", s);
		json_out_i64(o, slot, "cpu", a->o->slot_cpu[s]);
		if (sl->m >= 0) {
			json_out_i64(o, slot, "member", sl->m);
			json_out_i64(o, slot, "seat", sl->v);
			json_out_bool(o, slot, "revoking", sl->revoking);
			json_out_bool(o, slot, "probing", sl->probing);
		} else {
			json_out_null(o, slot, "member");
		}
	}
	json_t *members = json_out_arr(o, top, "members");
	for (int m = 0; m < a->max_members; m++) {
		struct agent_member *am = &a->mem[m];
		if (am->conn < 0)
			continue;
		struct member_view v;
		view(a, m, now, &v);
		json_t *mem = json_out_obj(o, members, NULL);
		json_out_i64(o, mem, "id", m);
		json_out_i64(o, mem, "pid", am->pid);
		json_out_str(o, mem, "vm", am->vm_name);
		json_out_u64(o, mem, "weight", v.st.weight);
		json_out_str(o, mem, "policy", v.policy);
		json_out_bool(o, mem, "gang", v.st.gang);
		json_out_bool(o, mem, "policy_applied", v.policy_ack == v.policy_gen);
		if (am->policy_set_ns)
			json_out_u64(o, mem, "policy_set_ns", am->policy_set_ns);
		if (am->weight_set_ns)
			json_out_u64(o, mem, "weight_set_ns", am->weight_set_ns);
		json_out_i64(o, mem, "vcpus", am->nvcpus);
		json_out_i64(o, mem, "seats", am->nseats);
		json_out_i64(o, mem, "held", v.st.nheld);
		json_out_i64(o, mem, "queued", v.st.nqueued);
		json_out_u64(o, mem, "slot_ns", v.st.held_ns);
		json_out_u64(o, mem, "joined_ns", v.st.joined_ns);
		json_out_f64(o, mem, "share", share(&v.st, a->core->nslots, now));
		json_out_u64(o, mem, "reclaims", v.st.reclaims);
		json_out_u64(o, mem, "probes", v.st.probes);
		json_out_u64(o, mem, "bad_words", am->bad_words);
		json_out_u64(o, mem, "revokes_obeyed", am->gave_back);
		json_out_u64(o, mem, "revoke_to_release_mean_ns", am->gave_back ? am->gave_back_ns / am->gave_back : 0);
		json_out_u64(o, mem, "revoke_to_release_max_ns", am->gave_back_max_ns);
		json_t *seat_states = json_out_arr(o, mem, "seat_states");
		for (int s = 0; s < am->nseats; s++)
			json_out_str(o, seat_states, NULL, seat_state(a->core->mem[m].v[s].state));
		json_t *vcpu_states = json_out_arr(o, mem, "vcpu_states"); /* as the member reports them */
		for (int i = 0; i < am->nvcpus; i++) {
			const struct dom_req_vcpu *rv = dom_shm_req_vcpu(&am->shm, i);
			json_t *vs = json_out_obj(o, vcpu_states, NULL);
			json_out_str(o, vs, "state", vstate_name(__atomic_load_n(&rv->state, __ATOMIC_RELAXED)));
			json_out_u64(o, vs, "running_ns", __atomic_load_n(&rv->ns_running, __ATOMIC_RELAXED));
		}
	}
	return json_out_write(o, f);
}

static void write_text(struct agent *a, FILE *f, uint64_t now)
{
	char conf[PATH_MAX + 64];
	fprintf(f, "domain %s: %d slots, slice %.1f ms, grace %.1f ms; agent pid %d, up %.1f s; confinement: %s\n",
		a->o->name, a->core->nslots, (double)a->core->slice_ns / 1e6, (double)a->core->grace_ns / 1e6,
		(int)getpid(), (double)(now - a->start_ns) / 1e9, dom_confine_describe(&a->confine, conf, sizeof(conf)));
	fprintf(f, "slots:\n");
	for (int s = 0; s < a->core->nslots; s++) {
		const struct dom_slot *sl = &a->core->slot[s];
		if (sl->m >= 0)
			fprintf(f, "  %d  cpu %-3d  member %d seat %d%s\n", s, a->o->slot_cpu[s], sl->m, sl->v,
				sl->revoking ? " (revoking)" : sl->probing ? " (probed)" : "");
		else
			fprintf(f, "  %d  cpu %-3d  free\n", s, a->o->slot_cpu[s]);
	}
	fprintf(f, "members: %d\n", a->nmembers);
	if (a->nmembers)
		fprintf(f, "  %-3s %-8s %-12s %6s %-10s %-4s %5s %5s %4s %6s %10s %7s %8s\n", "id", "pid", "vm", "weight",
			"policy", "gang", "vcpus", "seats", "held", "queued", "slot time", "share", "reclaims");
	for (int m = 0; m < a->max_members; m++) {
		struct agent_member *am = &a->mem[m];
		if (am->conn < 0)
			continue;
		struct member_view v;
		view(a, m, now, &v);
		char pol[48];
		snprintf(pol, sizeof(pol), "%s%s", v.policy, v.policy_ack == v.policy_gen ? "" : "*");
		fprintf(f, "  %-3d %-8d %-12s %6u %-10s %-4s %5d %5d %4d %6d %9.3fs %6.1f%% %8llu\n", m, (int)am->pid,
			am->vm_name[0] ? am->vm_name : "-", v.st.weight, pol, v.st.gang ? "yes" : "no", am->nvcpus, am->nseats, v.st.nheld,
			v.st.nqueued, (double)v.st.held_ns / 1e9, 100.0 * share(&v.st, a->core->nslots, now),
			(unsigned long long)v.st.reclaims);
		fprintf(f, "      vcpus:");
		for (int i = 0; i < am->nvcpus; i++) {
			const struct dom_req_vcpu *rv = dom_shm_req_vcpu(&am->shm, i);
			fprintf(f, " %d:%s", i, vstate_name(__atomic_load_n(&rv->state, __ATOMIC_RELAXED)));
		}
		fprintf(f, "\n");
	}
	if (a->nmembers)
		fprintf(f, "share: of the domain's slot time since the member joined; * policy change not applied yet;\n"
			   "gang: its seats are granted together across the domain\n");
}

void agent_status(struct agent *a, int c, uint32_t flags)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		agent_send_error(a->conn[c].fd, -ENOMEM, "out of memory");
		return;
	}
	uint64_t now = agent_now();
	int rc = 0;
	if (flags & DOM_STATUS_JSON)
		rc = write_json(a, f, now);
	else
		write_text(a, f, now);
	fclose(f);
	if (rc) {
		agent_send_error(a->conn[c].fd, rc, "status: %s", strerror(-rc));
		free(text);
		return;
	}
	if (len > DOM_TEXT_MAX) {
		text[DOM_TEXT_MAX - 4] = '\0';
		strcat(text, "...");
	}
	size_t cap = sizeof(struct dom_msg_hdr) + DOM_TEXT_MAX + 1;
	void *buf = malloc(cap);
	int n = buf ? dom_proto_status_reply(buf, cap, text) : -ENOMEM;
	if (n > 0)
		agent_send(a->conn[c].fd, buf, (size_t)n, NULL, 0);
	else
		agent_send_error(a->conn[c].fd, n, "status: %s", strerror(-n));
	free(buf);
	free(text);
}

void agent_set(struct agent *a, int c, const struct dom_msg_set *s)
{
	int fd = a->conn[c].fd;
	int m = -1;
	if (s->member >= 0 && s->member < a->max_members && a->mem[s->member].conn >= 0)
		m = s->member;
	for (int i = 0; s->member < 0 && i < a->max_members; i++)
		if (a->mem[i].conn >= 0 && a->mem[i].pid == s->pid)
			m = i;
	/* the caller's right first: another uid learns nothing of the members */
	char gwhy[160];
	int grc = agent_guard_set(a, c, m, s, gwhy, sizeof(gwhy));
	if (grc) {
		fprintf(a->log, "vmm: domain %s: refused a set from pid %d (uid %u): %s\n", a->o->name,
			(int)a->conn[c].pid, (unsigned)a->conn[c].uid, gwhy);
		a->refused++;
		agent_send_error(fd, grc, "%s", gwhy);
		return;
	}
	if (m < 0) {
		if (s->member >= 0)
			agent_send_error(fd, -ESRCH, "no member %d in domain %s", s->member, a->o->name);
		else
			agent_send_error(fd, -ESRCH, "no member with pid %d in domain %s", s->pid, a->o->name);
		return;
	}
	struct agent_member *am = &a->mem[m];
	uint64_t now = agent_now();
	if (s->what & DOM_SET_WEIGHT) {
		int rc = dom_core_set_weight(a->core, m, s->weight, now);
		if (rc) {
			agent_send_error(fd, rc, "weight %u refused", s->weight);
			return;
		}
		__atomic_store_n(&dom_shm_live(&am->shm)->weight, s->weight, __ATOMIC_RELEASE);
		rc = dom_confine_weight(&a->confine, am->pid, s->weight);
		if (rc) /* the books changed; the kernel's share did not */
			fprintf(a->log, "vmm: domain %s: member %d: cgroup weight not changed: %s\n", a->o->name, m,
				strerror(-rc));
		agent_mark_dirty(a, m); /* the member marks it in its report */
		agent_apply(a);
		am->weight_set_ns = now;
		fprintf(a->log, "vmm: domain %s: member %d: weight %u\n", a->o->name, m, s->weight);
	}
	if (s->what & DOM_SET_POLICY) {
		/* The books first: a gang needs its seats granted together. */
		bool gang = strcmp(s->policy, "gang") == 0;
		int rc = gang == a->core->mem[m].gang ? 0 : dom_core_set_gang(a->core, m, gang, now);
		if (rc) {
			agent_send_error(fd, rc, "yield policy %s refused", s->policy);
			return;
		}
		struct dom_grant_live *live = dom_shm_live(&am->shm);
		/* the name first, then its gen: the member reads them in that order reversed */
		memset(live->policy, 0, sizeof(live->policy));
		snprintf(live->policy, sizeof(live->policy), "%s", s->policy);
		__atomic_fetch_add(&live->policy_gen, 1, __ATOMIC_RELEASE);
		am->policy_set_ns = now;
		agent_mark_dirty(a, m);
		agent_apply(a);
		fprintf(a->log, "vmm: domain %s: member %d: yield policy %s\n", a->o->name, m, s->policy);
	}
	struct dom_msg_ok ok;
	int n = dom_proto_ok(&ok, now);
	if (n > 0)
		agent_send(fd, &ok, (size_t)n, NULL, 0);
}
