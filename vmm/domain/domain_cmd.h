/* `vmm domain start|status|set|stop ...`: the command line of the
 * scheduling domain; returns the process exit status. */
#ifndef VMM_DOMAIN_DOMAIN_CMD_H
#define VMM_DOMAIN_DOMAIN_CMD_H

int domain_cmd_main(int argc, char **argv);

#endif
