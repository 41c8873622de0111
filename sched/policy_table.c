#include <stddef.h>
#include <string.h>

#include "sched/policy.h"

static const struct sched_policy *const table[] = {
	&sched_policy_none, &sched_policy_random, &sched_policy_directed,
	&sched_policy_holder, &sched_policy_pv, &sched_policy_gang,
};
#define NPOL (sizeof(table) / sizeof(table[0]))

const struct sched_policy *sched_policy_find(const char *name)
{
	for (size_t i = 0; name && i < NPOL; i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}

const char *const *sched_policy_names(void)
{
	static const char *names[NPOL + 1];
	for (size_t i = 0; i < NPOL; i++)
		names[i] = table[i]->name; /* idempotent; no lock needed */
	return names;
}
