/* conformance/cli/icd.h — `--icd FILE`: run a Vulkan driver that is not installed.
 *
 * The Vulkan loader finds drivers through ICD manifest files (JSON naming the
 * driver's library). `--icd FILE` makes the loader use FILE's driver alone,
 * for this process and every process it starts (workers, compile passes,
 * re-time runs inherit the environment): VK_DRIVER_FILES and
 * VK_ICD_FILENAMES (older loaders read only the second) are set to FILE
 * before the first Vulkan call. FILE is checked first: a readable manifest
 * whose library_path names a file that exists. A bare library name
 * ("libvulkan_lvp.so") is refused: the loader would look it up in the
 * system's library path and could load the installed driver instead of the
 * one FILE came with (ci/fetch-mesa-backports.sh writes manifests with
 * absolute paths). */
#ifndef VKGRAD_CLI_ICD_H
#define VKGRAD_CLI_ICD_H

#include <stddef.h>
#include <stdbool.h>

/* Checks path and selects its driver for this process and its children.
 * false + msg when the manifest is missing, unreadable, not an ICD manifest,
 * or names a library that is not a path to an existing file. */
bool vkg_cli_icd_select(const char *path, char *msg, size_t msg_size);

/* Removes every "--icd FILE" of argv[1..argc) (the subcommand's arguments)
 * and selects FILE's driver. Returns the new argc, or -1 after printing why
 * on stderr (cmd names the command). */
int vkg_cli_icd_take(const char *cmd, int argc, char **argv);

#endif
