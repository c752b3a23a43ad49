/* conformance/cli/commands.h — the subcommands of the `vkgrad` program.
 * Each takes the arguments after its name (argv[0] is the subcommand name)
 * and returns the process exit status: 0 success, 1 a failure the command
 * exists to report (a failed case, a regression), 2 bad usage or input.
 *
 * demo, perf and conform also take self: the path of the `vkgrad` program, which they
 * run once more, untimed, before timing (perf/compile_pass.h); NULL when it
 * is not known (a test calling them in-process): no such pass runs. */
#ifndef VKGRAD_COMMANDS_H
#define VKGRAD_COMMANDS_H

int vkg_cmd_devices(int argc, char **argv);                /* cli/cmd_devices.c */
int vkg_cmd_conform(const char *self, int argc, char **argv); /* cli/cmd_conform.c */
int vkg_cmd_compare(int argc, char **argv);                /* cli/cmd_compare.c */
int vkg_cmd_demo(const char *self, int argc, char **argv); /* cli/cmd_demo.c */
int vkg_cmd_perf(const char *self, int argc, char **argv); /* cli/cmd_perf.c */
int vkg_cmd_train(int argc, char **argv);                  /* cli/cmd_train.c */

#endif
