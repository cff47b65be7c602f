/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_check.h: CHECK(x) for libFuzzer targets: an assertion that is always
 * on (the fuzz build is RelWithDebInfo, with NDEBUG), so a broken contract
 * aborts and libFuzzer keeps the input.
 */
#ifndef RINGCACHE_FUZZ_CHECK_H
#define RINGCACHE_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

#endif
