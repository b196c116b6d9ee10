/* SPDX-License-Identifier: MIT */
/** @file
 * libcluster: avoiding virtualization exits by running clusters of exiting
 * instructions inside the VMM (Agesen et al., "Software Techniques for
 * Avoiding Hardware Virtualization Exits", USENIX ATC 2012).
 *
 * Umbrella header: an embedding VMM includes this one file.
 */
#ifndef CLUSTER_CLUSTER_H
#define CLUSTER_CLUSTER_H

#include "error.h"
#include "cpu.h"
#include "exit.h"
#include "ops.h"
#include "decode.h"
#include "engine.h"
#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/**@{*/
/** The version of the headers, major.minor.patch (the same as the
 * library's soname major and the package version). */
#define LC_VERSION_MAJOR 0
#define LC_VERSION_MINOR 1
#define LC_VERSION_PATCH 0
/**@}*/

/** Version of the library actually linked: (major << 16) | (minor << 8) |
 * patch. Compare with LC_VERSION_MAJOR to detect an ABI mismatch. */
uint32_t lc_version(void);

/** The same as "major.minor.patch"; static string. */
const char *lc_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTER_CLUSTER_H */
