#include "vmm/core/loop_pin.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void loop_pin_apply(const struct loop_cpu_choice *c, struct dlink *link, struct loop_pin *out)
{
	snprintf(out->note, sizeof(out->note), "%s", c->note);
	if (c->cpu >= 0) {
		cpu_set_t one, now;
		CPU_ZERO(&one);
		CPU_SET(c->cpu, &one);
		/* a host that refuses (a cpuset changed since the start) costs the pin, not the run */
		if (sched_setaffinity(0, sizeof(one), &one) < 0) {
			int e = errno;
			fprintf(stderr, "vmm: --loop-cpu: cannot pin the event loop to CPU %d: %s\n", c->cpu, strerror(e));
			snprintf(out->note, sizeof(out->note), "could not pin to CPU %d (%s): %s", c->cpu, strerror(e),
				 c->note);
		} else if (link) {
			int rc = dlink_pin(link, &one, &now);
			if (rc || !CPU_EQUAL(&now, &one)) {
				size_t n = strlen(out->note);
				snprintf(out->note + n, sizeof(out->note) - n, "; the domain link thread is not with it (%s)",
					 rc ? strerror(-rc) : "another CPU set");
			}
		}
	}
	cpu_set_t got;
	if (sched_getaffinity(0, sizeof(got), &got) < 0) {
		out->cpu = -1;
		snprintf(out->cpus, sizeof(out->cpus), "unknown (%s)", strerror(errno));
		return;
	}
	out->cpu = loop_cpu_sole(&got);
	loop_cpu_list(&got, out->cpus, sizeof(out->cpus));
}
