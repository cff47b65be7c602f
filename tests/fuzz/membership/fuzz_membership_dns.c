/* SPDX-License-Identifier: Apache-2.0
 *
 * Fuzzes the DNS answer parser of the DNS membership source: any bytes from
 * the network give an RCODE with well-formed SRV records, or -EBADMSG /
 * -EMSGSIZE, never a read out of bounds. The message id is taken from the
 * input so answers reach the record parser.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "membership_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct membership__srv srv[8];
    size_t n = 0;
    uint16_t id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
    int rc = membership__dns_parse_srv(data, size, id, srv, 8, &n);
    if (rc < 0 && rc != -EBADMSG && rc != -EMSGSIZE)
        abort();
    if (rc > 15 || n > 8)
        abort();
    for (size_t i = 0; i < n; i++)
        if (strlen(srv[i].target) > MEMBERSHIP__DNS_NAME_MAX)
            abort();
    return 0;
}
