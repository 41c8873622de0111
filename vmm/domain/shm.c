/*
 * The shared segments between the domain agent and one member (shm.h).
 * The seals, not the mappings, are the protection: a mapping is only what
 * this process chose, a seal binds every process that ever holds the fd.
 */
#include "vmm/domain/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched/domain_core.h"

#define GRANT_LINES_BEFORE_SEATS (2 + DOM_SHM_BELL_LINES) /* dom_grant_hdr, dom_grant_live, bells */
#define REQ_LINES_BEFORE_SEATS 1   /* dom_req_hdr */

#define SEALS_SIZE (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define SEALS_REQ SEALS_SIZE
#define SEALS_GRANT (SEALS_SIZE | F_SEAL_FUTURE_WRITE)
/* a req with either would leave the member no writable mapping */
#define SEALS_NO_WRITE (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)

_Static_assert(sizeof(struct dom_grant_hdr) <= DOM_SHM_LINE, "grant header fits its line");
_Static_assert(sizeof(struct dom_grant_live) <= DOM_SHM_LINE, "grant live fits its line");
_Static_assert(DOM_SHM_BELL_LINES * DOM_SHM_LINE == DOM_SLOTS_MAX * sizeof(uint32_t), "a bell per slot, whole lines");
_Static_assert(sizeof(struct dom_req_hdr) <= DOM_SHM_LINE, "req header fits its line");
_Static_assert(DOM_SHM_LINE % sizeof(struct dom_req_vcpu) == 0,
	       "the vCPU array starts on a line and no entry straddles one");

static uint64_t page_round(uint64_t n)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

void dom_shm_sizes(int nseats, int nvcpus, uint64_t *req_size, uint64_t *grant_size)
{
	uint64_t ns = nseats > 0 ? (uint64_t)nseats : 0, nv = nvcpus > 0 ? (uint64_t)nvcpus : 0;

	*req_size = page_round((REQ_LINES_BEFORE_SEATS + ns) * DOM_SHM_LINE +
			       nv * sizeof(struct dom_req_vcpu));
	*grant_size = page_round((GRANT_LINES_BEFORE_SEATS + ns) * DOM_SHM_LINE);
}

static bool counts_ok(int nseats, int nvcpus)
{
	return nseats >= 1 && nseats <= DOM_VCPUS_MAX && nvcpus >= nseats && nvcpus <= DOM_VCPUS_MAX;
}

static void shm_reset(struct dom_shm *s, int nseats, int nvcpus, bool agent)
{
	memset(s, 0, sizeof(*s));
	s->nseats = nseats;
	s->nvcpus = nvcpus;
	s->req_fd = s->grant_fd = -1;
	s->agent = agent;
}

static int add_seals(int fd, int seals)
{
	return fcntl(fd, F_ADD_SEALS, seals) < 0 ? -errno : 0;
}

static int new_memfd(const char *name, uint64_t size, int *fd)
{
	*fd = memfd_create(name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, (off_t)size) < 0)
		return -errno;
	return 0;
}

static int map(int fd, uint64_t size, int prot, void **out)
{
	void *p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int dom_shm_create(struct dom_shm *s, int nseats, int nvcpus, uint64_t epoch)
{
	int rc;

	shm_reset(s, nseats, nvcpus, true);
	if (!counts_ok(nseats, nvcpus))
		return -EINVAL;
	dom_shm_sizes(nseats, nvcpus, &s->req_size, &s->grant_size);

	if ((rc = new_memfd("vmm-dom-req", s->req_size, &s->req_fd)) < 0 ||
	    (rc = add_seals(s->req_fd, SEALS_REQ)) < 0 ||
	    (rc = map(s->req_fd, s->req_size, PROT_READ, &s->req)) < 0 ||
	    (rc = new_memfd("vmm-dom-grant", s->grant_size, &s->grant_fd)) < 0 ||
	    (rc = map(s->grant_fd, s->grant_size, PROT_READ | PROT_WRITE, &s->grant)) < 0)
		goto fail;

	struct dom_grant_hdr *h = dom_shm_grant_hdr(s);
	h->magic = DOM_SHM_MAGIC;
	h->nseats = (uint32_t)nseats;
	h->nvcpus = (uint32_t)nvcpus;
	h->epoch = epoch;
	/* after our writable mapping exists: it keeps working, none can follow */
	if ((rc = add_seals(s->grant_fd, SEALS_GRANT)) < 0)
		goto fail;
	return 0;
fail:
	dom_shm_destroy(s);
	return rc;
}

/* 0 when fd is a sealable memfd of exactly `size` bytes holding every seal
 * in `want` and none in `deny`; -EPROTO otherwise. */
static int check_memfd(int fd, uint64_t size, int want, int deny)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != size)
		return -EPROTO;
	/* only shmem answers F_GET_SEALS, and a shmem file that did not come
	 * from memfd_create(MFD_ALLOW_SEALING) holds F_SEAL_SEAL alone */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EINVAL ? -EPROTO : -errno;
	if ((seals & want) != want || (seals & deny))
		return -EPROTO;
	return 0;
}

int dom_shm_attach(struct dom_shm *s, int req_fd, int grant_fd, int nseats,
		   int nvcpus, uint64_t epoch)
{
	int rc;

	shm_reset(s, nseats, nvcpus, false);
	s->req_fd = req_fd;
	s->grant_fd = grant_fd;
	if (!counts_ok(nseats, nvcpus)) {
		rc = -EINVAL;
		goto fail;
	}
	dom_shm_sizes(nseats, nvcpus, &s->req_size, &s->grant_size);
	if ((rc = check_memfd(grant_fd, s->grant_size, SEALS_GRANT, 0)) < 0 ||
	    (rc = check_memfd(req_fd, s->req_size, SEALS_REQ, SEALS_NO_WRITE)) < 0 ||
	    (rc = map(grant_fd, s->grant_size, PROT_READ, &s->grant)) < 0)
		goto fail;

	/* untrusted: each field loaded once */
	const struct dom_grant_hdr *h = dom_shm_grant_hdr(s);
	if (__atomic_load_n(&h->magic, __ATOMIC_RELAXED) != DOM_SHM_MAGIC ||
	    __atomic_load_n(&h->nseats, __ATOMIC_RELAXED) != (uint32_t)nseats ||
	    __atomic_load_n(&h->nvcpus, __ATOMIC_RELAXED) != (uint32_t)nvcpus ||
	    __atomic_load_n(&h->epoch, __ATOMIC_RELAXED) != epoch) {
		rc = -EPROTO;
		goto fail;
	}
	if ((rc = map(req_fd, s->req_size, PROT_READ | PROT_WRITE, &s->req)) < 0)
		goto fail;
	dom_shm_close_fds(s);
	return 0;
fail:
	dom_shm_destroy(s);
	return rc;
}

void dom_shm_close_fds(struct dom_shm *s)
{
	if (s->req_fd >= 0)
		close(s->req_fd);
	if (s->grant_fd >= 0)
		close(s->grant_fd);
	s->req_fd = s->grant_fd = -1;
}

void dom_shm_destroy(struct dom_shm *s)
{
	if (s->req)
		munmap(s->req, s->req_size);
	if (s->grant)
		munmap(s->grant, s->grant_size);
	s->req = s->grant = NULL;
	dom_shm_close_fds(s);
}

static char *line(void *base, uint64_t n)
{
	return (char *)base + n * DOM_SHM_LINE;
}

uint32_t *dom_shm_grant(const struct dom_shm *s, int seat)
{
	if (seat < 0 || seat >= s->nseats)
		return NULL;
	return (uint32_t *)line(s->grant, GRANT_LINES_BEFORE_SEATS + (uint64_t)seat);
}

uint32_t *dom_shm_req(const struct dom_shm *s, int seat)
{
	if (seat < 0 || seat >= s->nseats)
		return NULL;
	return (uint32_t *)line(s->req, REQ_LINES_BEFORE_SEATS + (uint64_t)seat);
}

uint32_t *dom_shm_probe_ack(const struct dom_shm *s, int seat)
{
	uint32_t *w = dom_shm_req(s, seat);
	return w ? w + 1 : NULL;
}

struct dom_grant_hdr *dom_shm_grant_hdr(const struct dom_shm *s)
{
	return (struct dom_grant_hdr *)line(s->grant, 0);
}

struct dom_grant_live *dom_shm_live(const struct dom_shm *s)
{
	return (struct dom_grant_live *)line(s->grant, 1);
}

uint64_t *dom_shm_grant_until(const struct dom_shm *s, int seat)
{
	uint32_t *w = dom_shm_grant(s, seat);
	return w ? (uint64_t *)((char *)w + sizeof(uint64_t)) : NULL;
}

uint32_t *dom_shm_slot_bell(const struct dom_shm *s, int slot)
{
	if (slot < 0 || slot >= DOM_SLOTS_MAX)
		return NULL;
	return (uint32_t *)line(s->grant, 2) + slot;
}

struct dom_req_hdr *dom_shm_req_hdr(const struct dom_shm *s)
{
	return (struct dom_req_hdr *)line(s->req, 0);
}

struct dom_req_vcpu *dom_shm_req_vcpu(const struct dom_shm *s, int v)
{
	if (v < 0 || v >= s->nvcpus)
		return NULL;
	return (struct dom_req_vcpu *)line(s->req, REQ_LINES_BEFORE_SEATS + (uint64_t)s->nseats) + v;
}

/* Shared, not FUTEX_PRIVATE: the two sides are different processes and the
 * kernel keys the word by the memfd's page, not by the address. */
int dom_futex_wait(const uint32_t *word, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts, *tp = NULL;
	if (timeout_ns) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
		ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
		tp = &ts;
	}
	if (syscall(SYS_futex, word, FUTEX_WAIT, val, tp, NULL, 0) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return 0;
}

int dom_futex_wake(uint32_t *word)
{
	long n = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return n < 0 ? -errno : (int)n;
}
