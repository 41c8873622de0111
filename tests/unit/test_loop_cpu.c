/* --loop-cpu: the pure choice of the event loop's CPU (vmm/core/loop_cpu.c)
 * for every mode and option, the CPU lists the report prints, and the
 * option's parsing. No threads are pinned here: run.c does that, and the
 * integration tests read the affinity back (test_loop_cpu.py). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmm/cli/cli.h"
#include "vmm/config.h"
#include "vmm/core/loop_cpu.h"

/* A set from a list ending in -1. */
static cpu_set_t set_of(const int *cpus)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	for (; *cpus >= 0; cpus++)
		CPU_SET(*cpus, &s);
	return s;
}

#define SET(...) set_of((const int[]){ __VA_ARGS__, -1 })
#define EMPTY set_of((const int[]){ -1 })

static int choose(cpu_set_t allowed, cpu_set_t slots, int want, enum loop_cpu_mode mode, struct loop_cpu_choice *c)
{
	struct loop_cpu_in in = { .allowed = &allowed, .slots = &slots, .want = want, .mode = mode };
	memset(c, 0x5a, sizeof(*c)); /* every field must be written */
	return loop_cpu_choose(&in, c);
}

static void test_auto_takes_the_first_cpu_no_slot_uses(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1), SET(0), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 1);
	CHECK(!c.on_slot);
	CHECK(strstr(c.note, "auto") && strstr(c.note, "outside the slots' CPUs (0)"));
	/* the first free one, wherever the slots lie */
	CHECK_EQ(choose(SET(0, 1, 2, 3), SET(1, 3), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 0);
	CHECK_EQ(choose(SET(2, 5, 9), SET(2), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 5);
	/* a CPU the process may not use is never chosen, free or not */
	CHECK_EQ(choose(SET(0, 1, 7), SET(0, 1), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 7);
	CHECK_EQ(choose(SET(CPU_SETSIZE - 1, 0), SET(0), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, CPU_SETSIZE - 1);
}

static void test_auto_leaves_the_loop_when_every_cpu_has_a_slot(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1), SET(0, 1), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, -1);
	CHECK(!c.on_slot);
	CHECK(strstr(c.note, "every CPU this process may use (0-1) is a slot's; not pinned") != NULL);
	CHECK_EQ(choose(SET(3), SET(3), LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, -1);
}

static void test_none_never_pins(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1), SET(0), LOOP_CPU_NONE, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, -1);
	CHECK(!strcmp(c.note, "--loop-cpu none: not pinned"));
	CHECK_EQ(choose(SET(0, 1, 2, 3), SET(0), LOOP_CPU_NONE, LOOP_CPU_DOMAIN, &c), 0);
	CHECK_EQ(c.cpu, -1);
}

static void test_a_named_cpu(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1), SET(0), 1, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 1);
	CHECK(!c.on_slot);
	CHECK(!strcmp(c.note, "--loop-cpu 1"));
	/* onto a slot's CPU: the user's experiment, said in the note */
	CHECK_EQ(choose(SET(0, 1), SET(0, 1), 0, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, 0);
	CHECK(c.on_slot);
	CHECK(strstr(c.note, "a slot's CPU") != NULL);
	CHECK_EQ(choose(SET(0, 1, 2), SET(1, 2), 2, LOOP_CPU_DOMAIN, &c), 0);
	CHECK_EQ(c.cpu, 2);
	CHECK(c.on_slot && strstr(c.note, "domain's CPUs"));
}

static void test_a_cpu_the_process_may_not_use_is_refused(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1), SET(0), 99, LOOP_CPU_VMM, &c), -EINVAL);
	CHECK_EQ(c.cpu, -1);
	CHECK(!strcmp(c.note, "--loop-cpu: CPU 99 is not one this process may use (0-1)"));
	CHECK(!strchr(c.note, '\n')); /* one line */
	CHECK_EQ(choose(SET(0, 2), SET(0), 1, LOOP_CPU_HOST, &c), -EINVAL);
	CHECK_EQ(choose(SET(0, 1), SET(0), CPU_SETSIZE - 1, LOOP_CPU_DOMAIN, &c), -EINVAL);
	/* past the set: refused, not read out of bounds */
	CHECK_EQ(choose(SET(0, 1), SET(0), CPU_SETSIZE, LOOP_CPU_VMM, &c), -EINVAL);
	/* auto and none never fail */
	CHECK_EQ(choose(EMPTY, EMPTY, LOOP_CPU_AUTO, LOOP_CPU_VMM, &c), 0);
	CHECK_EQ(c.cpu, -1);
}

static void test_host_mode_keeps_the_loop_with_the_vcpus(void)
{
	struct loop_cpu_choice c;
	/* a free CPU exists, yet auto stays with the threads (they inherit its set) */
	CHECK_EQ(choose(SET(0, 1, 2), SET(0, 1), LOOP_CPU_AUTO, LOOP_CPU_HOST, &c), 0);
	CHECK_EQ(c.cpu, -1);
	CHECK(strstr(c.note, "--sched host") && strstr(c.note, "(0-1)"));
	CHECK_EQ(choose(SET(0, 1, 2), SET(0, 1), LOOP_CPU_NONE, LOOP_CPU_HOST, &c), 0);
	CHECK_EQ(c.cpu, -1);
	CHECK_EQ(choose(SET(0, 1, 2), SET(0, 1), 2, LOOP_CPU_HOST, &c), 0);
	CHECK_EQ(c.cpu, 2);
	CHECK(!c.on_slot);
	CHECK_EQ(choose(SET(0, 1, 2), SET(0, 1), 1, LOOP_CPU_HOST, &c), 0);
	CHECK(c.cpu == 1 && c.on_slot);
}

static void test_domain_auto_goes_outside_the_domain(void)
{
	struct loop_cpu_choice c;
	CHECK_EQ(choose(SET(0, 1, 2, 3), SET(0, 1), LOOP_CPU_AUTO, LOOP_CPU_DOMAIN, &c), 0);
	CHECK_EQ(c.cpu, 2);
	CHECK(strstr(c.note, "outside the domain's CPUs (0-1)") != NULL);
	CHECK_EQ(choose(SET(0, 1), SET(0, 1), LOOP_CPU_AUTO, LOOP_CPU_DOMAIN, &c), 0);
	CHECK_EQ(c.cpu, -1);
	CHECK(strstr(c.note, "one of the domain's") != NULL);
}

/* Random sets: auto pins iff some allowed CPU has no slot, and then to the lowest such. */
static void test_auto_against_a_reading_of_the_rule(void)
{
	srand(13);
	for (int t = 0; t < 2000; t++) {
		cpu_set_t a, s;
		CPU_ZERO(&a);
		CPU_ZERO(&s);
		int span = 1 + rand() % 80;
		for (int c = 0; c < span; c++) {
			if (rand() % 3)
				CPU_SET(c, &a);
			if (rand() % 2)
				CPU_SET(c, &s);
		}
		int want = -1;
		for (int c = 0; c < span && want < 0; c++)
			if (CPU_ISSET(c, &a) && !CPU_ISSET(c, &s))
				want = c;
		struct loop_cpu_choice c;
		enum loop_cpu_mode m = t % 2 ? LOOP_CPU_VMM : LOOP_CPU_DOMAIN;
		CHECK_EQ(choose(a, s, LOOP_CPU_AUTO, m, &c), 0);
		CHECK_EQ(c.cpu, want);
		CHECK(!c.on_slot);
		CHECK(c.note[0] && strlen(c.note) < sizeof(c.note));
		/* any CPU named: accepted iff allowed, on_slot iff a slot's */
		int n = rand() % 90;
		int rc = choose(a, s, n, m, &c);
		CHECK_EQ(rc, CPU_ISSET(n, &a) ? 0 : -EINVAL);
		if (!rc)
			CHECK(c.cpu == n && c.on_slot == !!CPU_ISSET(n, &s));
	}
}

static void test_cpu_lists(void)
{
	char b[64];
	cpu_set_t s = EMPTY;
	CHECK(!strcmp(loop_cpu_list(&s, b, sizeof(b)), ""));
	s = SET(0);
	CHECK(!strcmp(loop_cpu_list(&s, b, sizeof(b)), "0"));
	s = SET(0, 1, 2, 5, 7, 8);
	CHECK(!strcmp(loop_cpu_list(&s, b, sizeof(b)), "0-2,5,7-8"));
	s = SET(CPU_SETSIZE - 2, CPU_SETSIZE - 1);
	CHECK(!strcmp(loop_cpu_list(&s, b, sizeof(b)), "1022-1023"));
	/* too long: whole ranges, then "..." */
	CPU_ZERO(&s);
	for (int c = 0; c < 200; c += 2)
		CPU_SET(c, &s);
	char small[16];
	loop_cpu_list(&s, small, sizeof(small));
	CHECK(!strcmp(small, "0,2,4,6,8,10..."));
	for (size_t len = 1; len < sizeof(b); len++) {
		memset(b, 'x', sizeof(b));
		loop_cpu_list(&s, b, len);
		CHECK(strlen(b) < len); /* terminated inside */
		CHECK(b[len] == 'x');    /* nothing written past */
	}
}

static void test_sole(void)
{
	cpu_set_t s = SET(4);
	CHECK_EQ(loop_cpu_sole(&s), 4);
	s = SET(4, 5);
	CHECK_EQ(loop_cpu_sole(&s), -1);
	s = EMPTY;
	CHECK_EQ(loop_cpu_sole(&s), -1);
}

static int parse(const char *arg, struct vm_config *cfg, char *err)
{
	char *argv[] = { "run", "--loop-cpu", (char *)arg, NULL };
	vm_config_defaults(cfg);
	err[0] = '\0';
	return cli_parse_run(3, argv, cfg, err, 256);
}

static void test_option(void)
{
	struct vm_config cfg;
	char err[256];
	vm_config_defaults(&cfg);
	CHECK_EQ(cfg.loop_cpu, LOOP_CPU_AUTO);
	CHECK_EQ(parse("none", &cfg, err), CLI_OK);
	CHECK_EQ(cfg.loop_cpu, LOOP_CPU_NONE);
	CHECK_EQ(parse("auto", &cfg, err), CLI_OK);
	CHECK_EQ(cfg.loop_cpu, LOOP_CPU_AUTO);
	CHECK_EQ(parse("0", &cfg, err), CLI_OK);
	CHECK_EQ(cfg.loop_cpu, 0);
	CHECK_EQ(parse("1023", &cfg, err), CLI_OK);
	CHECK_EQ(cfg.loop_cpu, 1023);
	const char *bad[] = { "1024", "-1", "x", "", "1,2", "Auto" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(parse(bad[i], &cfg, err) < 0);
		CHECK(strstr(err, "--loop-cpu") && !strchr(err, '\n'));
	}
}

int main(void)
{
	RUN(test_auto_takes_the_first_cpu_no_slot_uses);
	RUN(test_auto_leaves_the_loop_when_every_cpu_has_a_slot);
	RUN(test_none_never_pins);
	RUN(test_a_named_cpu);
	RUN(test_a_cpu_the_process_may_not_use_is_refused);
	RUN(test_host_mode_keeps_the_loop_with_the_vcpus);
	RUN(test_domain_auto_goes_outside_the_domain);
	RUN(test_auto_against_a_reading_of_the_rule);
	RUN(test_cpu_lists);
	RUN(test_sole);
	RUN(test_option);
	return check_summary();
}
