/* SPDX-License-Identifier: Apache-2.0
 *
 * Fuzzes membership_parse_list(): any bytes must give either a list whose
 * every member has a non-empty id and a host:port address, or -EINVAL/-E2BIG
 * with a message; a parsed list must also build a ring.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "membership.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct membership_list l = {0};
    char why[256] = "";
    uint16_t port = size > 0 && (data[0] & 1) ? 7070 : 0;
    int rc = membership_parse_list((const char *)data, size, port, &l, why, sizeof why);
    if (rc < 0) {
        if (rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM)
            abort();
        if (why[0] == '\0' || l.members != NULL)
            abort();
        return 0;
    }
    if (l.n == 0)
        abort();
    for (size_t i = 0; i < l.n; i++)
        if (l.members[i].id[0] == '\0' || strrchr(l.members[i].addr, ':') == NULL)
            abort();
    struct ring_options o = {.table_bits = RING_TABLE_BITS_MIN};
    struct ring *r = NULL;
    if (ring_create(&r, l.members, l.n, &o, NULL, 0) != 0)
        abort(); /* the parser accepted what the ring refuses */
    ring_destroy(&r);
    membership_list_deinit(&l);
    return 0;
}
