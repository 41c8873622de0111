/*
 * The agent's state, shared by agent.c (socket, loop, lifecycle),
 * agent_members.c (join, leave, doorbells, grants) and agent_status.c
 * (status and set). Single-threaded: everything runs in the agent's loop.
 */
#ifndef VMM_DOMAIN_AGENT_INT_H
#define VMM_DOMAIN_AGENT_INT_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sched/domain_core.h"
#include "sched/domain_proto.h"
#include "vmm/domain/agent.h"
#include "vmm/domain/confine.h"
#include "vmm/domain/shm.h"

/* What a completion is for: user_data = kind << 56 | gen << 24 | index. */
enum agent_ev { AEV_LISTEN = 1, AEV_CONN, AEV_BELL, AEV_PID, AEV_TIMER, AEV_SIGNAL, AEV_CANCEL };

struct agent_conn {
	int fd;          /* -1: free */
	uint32_t gen;    /* bumped at every reuse: stale completions are dropped */
	int member;      /* the member this connection joined as, or -1 */
	pid_t pid;
	uid_t uid;
	uint64_t opened_ns;  /* it must JOIN within a bound of this (agent_guard.c) */
};

struct agent_member {
	int conn;            /* its connection */
	pid_t pid;
	int pidfd;
	int bell;            /* eventfd it writes after changing req words */
	uint64_t bell_buf;
	uint32_t gen;        /* tags this member's loop requests */
	struct dom_shm shm;
	uint32_t *seen;      /* [nseats] req words as last read */
	uint32_t *cur_gen;   /* [nseats] the gen of the grant in force */
	uint32_t next_gen;
	bool dirty;          /* a probe, `waiting` or a live setting changed: bump a2m and wake */
	int nseats, nvcpus;
	char policy[DOM_NAME_MAX], vm_name[DOM_NAME_MAX];
	uint64_t bad_words;  /* req values that fit nothing (its own loss) */
	uint32_t probe_ack_seen; /* the last bad probe answer counted */
	uint64_t gave_back, gave_back_ns, gave_back_max_ns; /* revoked slots given back, and how long it took */
	uint64_t policy_set_ns, weight_set_ns; /* last live change, agent clock */
	uint64_t win_start, win_rings, win_rewrites; /* this second's doorbells (agent_guard.c) */
	char eject_why[96];
};

struct agent {
	const struct dom_agent_opts *o;
	FILE *log;                   /* its one-line events: stderr (a fuzzer's rig: /dev/null) */
	char dir[108], sock_path[108], pid_path[108];
	int lsock, sigfd;
	int dirfd;                   /* the domain's directory, walked by dom_dir_open */
	bool bound;                  /* the socket is ours: remove it and the pid file at the end */
	struct io_uring ring;
	struct dom_core *core;
	struct agent_member *mem;    /* [max_members], by dom_core member id */
	struct agent_conn *conn;     /* [max_conns] */
	int max_members, max_conns;
	uint64_t epoch, start_ns;
	struct __kernel_timespec ts;
	uint64_t timer_at;           /* the armed tick, UINT64_MAX: none */
	bool timer_armed;
	uint64_t sig_buf[16];
	int *dirty, ndirty;          /* members whose grant words changed */
	bool waiting;                /* what the members were last told: someone waits for a slot */
	int nmembers;
	uint64_t joins, leaves, refused;
	uint64_t stalls;             /* times its own timer fired over AGENT_STALL_NS late */
	uint64_t quiet_until;        /* a dead agent's members may still run on its slots: no
					doorbell is read (nothing granted) before; 0: none */
	uid_t owner;                 /* the agent's user: it and root may change members */
	int uid_conns;               /* connections per other uid */
	uint64_t guard_next;         /* the earliest unjoined connection's deadline */
	uint64_t timed_out, over_uid_conns, ejected_bells, ejected_words;
	struct dom_confine confine;  /* the members' cgroups, or why none */
	bool stop;
};

uint64_t agent_now(void);
/* The agent's state in memory, as agent_init starts it before any file,
 * socket or ring (the fuzzer's rig uses it alone). 0, or -errno with why. */
int agent_books_init(struct agent *a, const struct dom_agent_opts *o, char *why, size_t len);
uint64_t agent_tag(enum agent_ev kind, uint32_t gen, int idx);
/* Arms a one-shot request; -EBUSY when the ring is full even after a submit. */
int agent_poll(struct agent *a, int fd, uint64_t tag);
int agent_read(struct agent *a, int fd, void *buf, unsigned len, uint64_t tag);
void agent_cancel(struct agent *a, uint64_t tag);
void agent_conn_close(struct agent *a, int c);
int agent_send(int fd, const void *msg, size_t len, const int *fds, int nfds);
void agent_send_error(int fd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* agent_members.c */
int agent_join(struct agent *a, int c, const struct dom_msg_join *j);
void agent_leave(struct agent *a, int m, const char *why);
/* The number of req words that changed. */
int agent_doorbell(struct agent *a, int m);
void agent_apply(struct agent *a);  /* executes and clears the core's actions */
void agent_mark_dirty(struct agent *a, int m);
void agent_tick(struct agent *a);
/* The agent's own timer fired late ns late (it was stopped): read every
 * member's words, then move the hard deadlines out by it. */
void agent_stalled(struct agent *a, uint64_t late);
/* The quiet start is over: every member's words read (its first grants). */
void agent_quiet_end(struct agent *a);

/* agent_status.c */
void agent_status(struct agent *a, int c, uint32_t flags);
void agent_set(struct agent *a, int c, const struct dom_msg_set *s);

#endif
