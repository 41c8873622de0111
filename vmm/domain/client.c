#include "vmm/domain/client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sched/domain_proto.h"
#include "vmm/domain/paths.h"

/* Sends req, receives one answer into buf (cap bytes) and decodes it. */
static int ask(const char *domain, const void *req, size_t rlen, void *buf, size_t cap, union dom_msg *msg,
	       const char **text, char *why, size_t len)
{
	int fd = dom_dial(domain, why, len);
	if (fd < 0)
		return fd;
	/* A connection the agent refused at accept has its ERROR queued; our
	 * request may have crossed the close, which then reads as a reset
	 * (the reset is said once, then the queued answer): read it anyway. */
	ssize_t n = send(fd, req, rlen, MSG_NOSIGNAL);
	if (n == (ssize_t)rlen || (n < 0 && (errno == EPIPE || errno == ECONNRESET)))
		n = recv(fd, buf, cap, 0);
	if (n < 0 && errno == ECONNRESET)
		n = recv(fd, buf, cap, MSG_DONTWAIT);
	int e = errno;
	close(fd);
	if (n <= 0) {
		snprintf(why, len, "domain '%s': no answer from the agent: %s", domain, n < 0 ? strerror(e) : "closed");
		return n < 0 ? -e : -EPIPE;
	}
	const char *dwhy = NULL;
	int type = dom_proto_decode(buf, (size_t)n, msg, text, &dwhy);
	if (type < 0) {
		snprintf(why, len, "domain '%s': the agent's answer is malformed: %s", domain, dwhy ? dwhy : "?");
		return type;
	}
	if (type == DOM_MSG_ERROR) {
		snprintf(why, len, "domain '%s': %s", domain, msg->error.why);
		return msg->error.code;
	}
	return type;
}

int dom_client_status(const char *domain, int json, FILE *out, char *why, size_t len)
{
	struct dom_msg_status req;
	int n = dom_proto_status(&req, json ? DOM_STATUS_JSON : 0);
	if (n < 0)
		return n;
	size_t cap = sizeof(struct dom_msg_hdr) + DOM_TEXT_MAX + 1;
	void *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	union dom_msg msg;
	const char *text = NULL;
	int type = ask(domain, &req, (size_t)n, buf, cap, &msg, &text, why, len);
	if (type == DOM_MSG_STATUS_REPLY && text)
		fputs(text, out);
	else if (type > 0) {
		snprintf(why, len, "domain '%s': the agent answered status with message type %d", domain, type);
		type = -EPROTO;
	}
	free(buf);
	return type < 0 ? type : 0;
}

int dom_client_set(const char *domain, int member, int pid, unsigned what, uint32_t weight, const char *policy,
		   uint64_t *at_ns, char *why, size_t len)
{
	struct dom_msg_set req;
	int n = dom_proto_set(&req, member, pid, what, weight, policy ? policy : "");
	if (n < 0) {
		snprintf(why, len, "cannot encode the request: %s", strerror(-n));
		return n;
	}
	_Alignas(8) unsigned char buf[DOM_MSG_MAX];
	union dom_msg msg;
	int type = ask(domain, &req, (size_t)n, buf, sizeof(buf), &msg, NULL, why, len);
	if (type < 0)
		return type;
	if (type != DOM_MSG_OK) {
		snprintf(why, len, "domain '%s': the agent answered set with message type %d", domain, type);
		return -EPROTO;
	}
	*at_ns = msg.ok.at_ns;
	return 0;
}
