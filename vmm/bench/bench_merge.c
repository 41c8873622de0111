#include "vmm/bench/bench_shard.h"
int bench_merge_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 2;
}
