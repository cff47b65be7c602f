/* SPDX-License-Identifier: Apache-2.0
 *
 * The DNS message codec the DNS membership source needs for SRV records
 * (RFC 1035 section 4, RFC 2782, RFC 6891 for the OPT record): write one
 * query, read the SRV records of an answer. Answers come from the network:
 * every offset is bounds-checked, compression pointers are followed a bounded
 * number of times, and nothing is fatal (tests/fuzz/membership fuzzes it).
 *
 *   header: id(2) flags(2) qdcount(2) ancount(2) nscount(2) arcount(2)
 *   question: name type(2) class(2)
 *   record: name type(2) class(2) ttl(4) rdlength(2) rdata
 *   SRV rdata: priority(2) weight(2) port(2) target(name)
 */
#include "membership_int.h"

#include <errno.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

int membership__dns_query(uint8_t *buf, size_t cap, uint16_t id, const char *name, uint16_t type)
{
    size_t nlen = strlen(name);
    if (nlen > 0 && name[nlen - 1] == '.')
        nlen--;
    if (nlen == 0 || nlen > 253 || cap < 12 + nlen + 2 + 4 + 11)
        return -EINVAL;
    memset(buf, 0, 12);
    put16(buf, id);
    put16(buf + 2, 0x0100); /* RD */
    put16(buf + 4, 1);      /* QDCOUNT */
    put16(buf + 10, 1);     /* ARCOUNT: the OPT record */
    size_t o = 12, label = 0;
    for (size_t i = 0; i <= nlen; i++) {
        if (i == nlen || name[i] == '.') {
            size_t l = i - label;
            if (l == 0 || l > 63)
                return -EINVAL;
            buf[o++] = (uint8_t)l;
            memcpy(buf + o, name + label, l);
            o += l;
            label = i + 1;
        }
    }
    buf[o++] = 0;
    put16(buf + o, type);
    put16(buf + o + 2, 1); /* IN */
    o += 4;
    /* OPT: root name, type 41, class = UDP payload size, ttl 0, rdlength 0 */
    buf[o++] = 0;
    put16(buf + o, 41);
    put16(buf + o + 2, MEMBERSHIP__DNS_UDP_MAX);
    memset(buf + o + 4, 0, 6);
    o += 10;
    return (int)o;
}

/* Reads the (possibly compressed) name at *off into out (dotted, no trailing
 * dot; "" for the root) and advances *off past it in the record. */
static int read_name(const uint8_t *msg, size_t len, size_t *off, char *out, size_t cap)
{
    size_t p = *off, o = 0, end = 0;
    int jumps = 0;
    for (;;) {
        if (p >= len)
            return -EBADMSG;
        uint8_t l = msg[p];
        if ((l & 0xc0) == 0xc0) {
            if (p + 1 >= len || ++jumps > 32)
                return -EBADMSG;
            if (end == 0)
                end = p + 2;
            p = (size_t)(l & 0x3f) << 8 | msg[p + 1];
            continue;
        }
        if (l & 0xc0)
            return -EBADMSG;
        if (l == 0) {
            if (end == 0)
                end = p + 1;
            break;
        }
        if (p + 1 + l > len)
            return -EBADMSG;
        if (out != NULL) {
            if (o + (o > 0) + l + 1 > cap)
                return -EBADMSG;
            if (o > 0)
                out[o++] = '.';
            memcpy(out + o, msg + p + 1, l);
            o += l;
        }
        p += 1 + (size_t)l;
    }
    if (out != NULL)
        out[o] = '\0';
    *off = end;
    return 0;
}

int membership__dns_parse_srv(const uint8_t *msg, size_t len, uint16_t id,
                              struct membership__srv *out, size_t cap, size_t *n)
{
    *n = 0;
    if (len < 12 || get16(msg) != id)
        return -EBADMSG;
    uint16_t flags = get16(msg + 2);
    if (!(flags & 0x8000))
        return -EBADMSG; /* not an answer */
    if (flags & 0x0200)
        return -EMSGSIZE;
    int rcode = flags & 0x000f;
    uint16_t qd = get16(msg + 4), an = get16(msg + 6);
    size_t off = 12;
    for (uint16_t i = 0; i < qd; i++) {
        if (read_name(msg, len, &off, NULL, 0) < 0 || off + 4 > len)
            return -EBADMSG;
        off += 4;
    }
    for (uint16_t i = 0; i < an; i++) {
        if (read_name(msg, len, &off, NULL, 0) < 0 || off + 10 > len)
            return -EBADMSG;
        uint16_t type = get16(msg + off), klass = get16(msg + off + 2);
        uint16_t rdlen = get16(msg + off + 8);
        off += 10;
        if (off + rdlen > len)
            return -EBADMSG;
        if (type == MEMBERSHIP__DNS_TYPE_SRV && klass == 1) {
            if (rdlen < 7)
                return -EBADMSG;
            struct membership__srv srv;
            srv.priority = get16(msg + off);
            srv.weight = get16(msg + off + 2);
            srv.port = get16(msg + off + 4);
            size_t t = off + 6;
            if (read_name(msg, len, &t, srv.target, sizeof srv.target) < 0 || t > off + rdlen)
                return -EBADMSG;
            if (*n < cap)
                out[(*n)++] = srv;
        }
        off += rdlen;
    }
    return rcode;
}
