/* SPDX-License-Identifier: Apache-2.0
 *
 * test_tenants.c: the tenants file (cached/tenants.h): a full file with every
 * key, token lookup, prefix rules at their edges, credentials, every refusal
 * with its file:line message, and that no message carries a token or secret.
 */
#include "tenants.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define TOK_A  "9f2c1e0a7b3d4c5e6f708192a3b4c5d6"
#define TOK_B  "tok-bbbbbbbbbbbbbbbb"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"

static const char full[] = "# tenants of the test cluster\n"
                           "\n"
                           "[tenant analytics]\n"
                           "token = " TOK_A "   # what clients send in HELLO\n"
                           "allow = s3://bucket-a/prefix/ s3://bucket-b/,s3://bucket-c\n"
                           "allow = s3://bucket-d/logs   s3://bucket-a/prefix/\n"
                           "aws_access_key_id = AKIAEXAMPLE\n"
                           "aws_secret_access_key = " SECRET "\n"
                           "aws_session_token = \"FwoGZXIvYXdzE\\\"x\"\n"
                           "\r\n"
                           "[ tenant   ingest ]\r\n"
                           "  token=" TOK_B "\n"
                           "  allow = s3://raw/\n";

static bool allows(const ten_tenant *t, const char *bucket, const char *key)
{
    return ten_allows(t, bucket, strlen(bucket), key, strlen(key));
}

static void test_full_file(void **state)
{
    (void)state;
    ten_set *s = NULL;
    char err[256];
    assert_int_equal(ten_parse(&s, full, strlen(full), "T", err, sizeof err), 0);
    assert_int_equal(ten_count(s), 2);

    const ten_tenant *a = ten_find(s, TOK_A, strlen(TOK_A));
    const ten_tenant *b = ten_find(s, TOK_B, strlen(TOK_B));
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(ten_at(s, 0), a);
    assert_ptr_equal(ten_at(s, 1), b);
    assert_null(ten_at(s, 2));
    assert_string_equal(ten_name(a), "analytics");
    assert_string_equal(ten_name(b), "ingest");
    assert_string_equal(ten_access_key(a), "AKIAEXAMPLE");
    assert_string_equal(ten_secret_key(a), SECRET);
    assert_string_equal(ten_session_token(a), "FwoGZXIvYXdzE\"x");
    assert_null(ten_access_key(b));
    assert_null(ten_secret_key(b));
    assert_null(ten_session_token(b));

    /* unknown, truncated, extended, empty tokens */
    assert_null(ten_find(s, TOK_A, strlen(TOK_A) - 1));
    assert_null(ten_find(s, TOK_A "x", strlen(TOK_A) + 1));
    assert_null(ten_find(s, "", 0));
    assert_null(ten_find(s, NULL, 0));
    assert_null(ten_find(NULL, TOK_A, strlen(TOK_A)));
    char flipped[] = TOK_A;
    flipped[10] ^= 1;
    assert_null(ten_find(s, flipped, strlen(flipped)));

    /* prefixes */
    assert_true(allows(a, "bucket-a", "prefix/x.parquet"));
    assert_true(allows(a, "bucket-a", "prefix/"));
    assert_false(allows(a, "bucket-a", "prefix"));
    assert_false(allows(a, "bucket-a", "other/x"));
    assert_false(allows(a, "bucket-a", ""));
    assert_true(allows(a, "bucket-b", "anything/at/all"));
    assert_true(allows(a, "bucket-b", ""));
    assert_true(allows(a, "bucket-c", "x"));
    assert_true(allows(a, "bucket-d", "logs/2024"));
    assert_true(allows(a, "bucket-d", "logs-old/x")); /* a plain prefix, as in S3 */
    assert_false(allows(a, "bucket-bb", "x"));        /* buckets match exactly */
    assert_false(allows(a, "bucket-", "x"));
    assert_false(allows(a, "raw", "x"));
    assert_true(allows(b, "raw", "x"));
    assert_false(allows(b, "bucket-a", "prefix/x"));
    assert_false(ten_allows(NULL, "raw", 3, "x", 1));
    assert_true(ten_allows(b, "raw", 3, NULL, 0));
    /* lengths, not NULs, delimit */
    assert_true(ten_allows(b, "rawx", 3, "k", 1));
    assert_false(ten_allows(a, "bucket-a", 8, "prefix/x", 6));
    ten_destroy(&s);
    assert_null(s);
    ten_destroy(&s);
    ten_destroy(NULL);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"token = " TOK_A "\n",
         "T:1: `token` is outside a tenant section; start one with [tenant NAME]"},
        {"[tenant a]\ntoken = short\nallow = s3://b/\n",
         "T:2: the token of tenant a is 5 characters long; use 16 to 256 (for example the output of `openssl rand -hex 16`)"},
        {"[tenant a]\ntoken = \"has a space in it!!\"\nallow = s3://b/\n",
         "T:2: the token of tenant a contains a space or a control character; use printable characters only"},
        {"[tenant a]\nallow = s3://b/\n",
         "T:1: tenant a has no token; add `token = ...` (16 characters or more), or S3 API keys (s3api_access_key_id and s3api_secret_access_key)"},
        {"[tenant a]\nallow = s3://b/\ns3api_access_key_id = AKIDA\n",
         "T:3: tenant a sets s3api_access_key_id but not s3api_secret_access_key; set both or neither"},
        {"[tenant a]\nallow = s3://b/\ns3api_access_key_id = AKIDA\ns3api_secret_access_key = " SECRET
         "\n"
         "[tenant b]\nallow = s3://c/\ns3api_access_key_id = AKIDA\ns3api_secret_access_key = x\n",
         "T:7: tenant b has the same s3api_access_key_id as tenant a (line 3); give every tenant its own"},
        {"[tenant a]\nallow = s3://b/\npublic = maybe\n",
         "T:3: public of tenant a must be true or false, not 'maybe'"},
        {"[tenant a]\npublic = true\npublic = false\n",
         "T:3: public of tenant a is already set on line 2; keep one"},
        {"[tenant a]\ntoken = " TOK_A "\n",
         "T:1: tenant a has no allow line, so it could read nothing; add `allow = s3://bucket/prefix/`"},
        {"[tenant a]\ntoken = " TOK_A "\nallow = s3://b/\n[tenant a]\n",
         "T:4: tenant a is already defined on line 1; merge the two sections or rename one"},
        {"[tenant a]\ntoken = " TOK_A "\nallow = s3://b/\n\n[tenant b]\ntoken = " TOK_A
         "\nallow = s3://c/\n",
         "T:6: tenant b has the same token as tenant a (line 2); give every tenant its own token"},
        {"[tenant a]\ntoken = " TOK_A "\ntoken = " TOK_B "\n",
         "T:3: the token of tenant a is already set on line 2; keep one"},
        {"[tenant a]\nallow = b/prefix\n",
         "T:2: allow entry 'b/prefix' of tenant a must start with s3:// (for example s3://bucket/prefix/)"},
        {"[tenant a]\nallow = s3:///x\n",
         "T:2: allow entry 's3:///x' of tenant a has no valid bucket name (write s3://bucket/ or s3://bucket/prefix/)"},
        {"[tenant a]\nallow = , ,\n",
         "T:2: allow of tenant a is empty (list s3://bucket/prefix/ entries, separated by spaces or commas)"},
        {"[tenant a]\ntokn = x\n", "T:2: unknown key 'tokn' in tenant a (did you mean 'token'?)"},
        {"[tenant a]\naws-access-key-id = x\n",
         "T:2: unknown key 'aws-access-key-id' in tenant a (did you mean 'aws_access_key_id'?)"},
        {"[tenant a]\nregion = x\n",
         "T:2: unknown key 'region' in tenant a (known keys: token, allow, aws_access_key_id, aws_secret_access_key, aws_session_token, s3api_access_key_id, s3api_secret_access_key, public)"},
        {"[tenant a]\ntoken = " TOK_A "\nallow = s3://b/\naws_secret_access_key = " SECRET "\n",
         "T:4: tenant a sets aws_secret_access_key but not aws_access_key_id; set both or neither"},
        {"[tenant a]\ntoken = " TOK_A "\nallow = s3://b/\naws_session_token = " SECRET "\n",
         "T:4: tenant a sets aws_session_token without aws_access_key_id and aws_secret_access_key; set all three or drop it"},
        {"[tenant a]\naws_secret_access_key = \"" SECRET " x\"\n",
         "T:2: aws_secret_access_key of tenant a must be 1 to 127 printable characters without spaces"},
        {"[user a]\n", "T:1: unknown section [user a]; sections are [tenant NAME]"},
        {"[tenant a b]\n",
         "T:1: tenant name 'a b' is not 1 to 64 letters, digits, '.', '_' or '-'"},
        {"[tenant a\n", "T:1: a section header without its closing ']' (write [tenant NAME])"},
        {"[tenant a] x\n", "T:1: text after the section header (start a comment with #)"},
        {"[tenant a]\ntoken " TOK_A "\n", "T:2: expected `key = value` or a [tenant NAME] header"},
        {"[tenant a]\ntoken = \"" TOK_A "\n", "T:2: the quoted value has no closing quote"},
        {"# nothing here\n\n",
         "T defines no tenant; add a [tenant NAME] section with a token and an allow line"},
        {"", "T defines no tenant; add a [tenant NAME] section with a token and an allow line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ten_set *s = (ten_set *)0x1;
        char err[256] = "";
        int rc = ten_parse(&s, cases[i].text, strlen(cases[i].text), "T", err, sizeof err);
        assert_int_equal(rc, -EINVAL);
        assert_null(s);
        assert_string_equal(err, cases[i].want);
        /* no secret in any message */
        assert_null(strstr(err, TOK_A));
        assert_null(strstr(err, TOK_B));
        assert_null(strstr(err, SECRET));
        assert_null(strstr(err, "short"));
    }
    ten_set *s;
    char err[256];
    assert_int_equal(ten_parse(&s, "[tenant a]\n\0", 12, "T", err, sizeof err), -EINVAL);
    assert_string_equal(err, "T:2: the line contains a NUL byte (is this a text file?)");
    /* a long token is fine up to the limit, not above */
    char text[700];
    char tok[300];
    memset(tok, 'k', 256);
    tok[256] = '\0';
    snprintf(text, sizeof text, "[tenant a]\ntoken = %s\nallow = s3://b/\n", tok);
    assert_int_equal(ten_parse(&s, text, strlen(text), "T", err, sizeof err), 0);
    assert_non_null(ten_find(s, tok, 256));
    ten_destroy(&s);
    memset(tok, 'k', 257);
    tok[257] = '\0';
    snprintf(text, sizeof text, "[tenant a]\ntoken = %s\nallow = s3://b/\n", tok);
    assert_int_equal(ten_parse(&s, text, strlen(text), "T", err, sizeof err), -EINVAL);
    assert_null(strstr(err, tok));
}

/* The S3 API's keys and public tenants: a tenant of the S3 API alone needs
 * no token; the key id finds it, the secret is what signatures are checked
 * with; a tenant's name finds it (a peer's GET names it). */
static void test_s3api_keys(void **state)
{
    (void)state;
    static const char text[] = "[tenant api]\n"
                               "allow = s3://bkt/data/ s3://other/\n"
                               "s3api_access_key_id = AKIDAPI\n"
                               "s3api_secret_access_key = " SECRET "\n"
                               "[tenant open]\n"
                               "allow = s3://pub/\n"
                               "public = yes\n"
                               "[tenant tok]\n"
                               "token = " TOK_A "\n"
                               "allow = s3://bkt/\n";
    ten_set *s;
    char err[256];
    assert_int_equal(ten_parse(&s, text, strlen(text), "T", err, sizeof err), 0);
    const ten_tenant *api = ten_find_s3api_key(s, "AKIDAPI");
    assert_non_null(api);
    assert_string_equal(ten_name(api), "api");
    assert_string_equal(ten_s3api_secret(api), SECRET);
    assert_false(ten_public(api));
    assert_null(ten_find_s3api_key(s, "AKIDNOPE"));
    assert_null(ten_find_s3api_key(s, NULL));
    const ten_tenant *open = ten_find_name(s, "open", 4);
    assert_non_null(open);
    assert_true(ten_public(open));
    assert_null(ten_s3api_secret(open));
    assert_null(ten_find_name(s, "ope", 3));
    assert_true(ten_allows_bucket(api, "other", 5));
    assert_true(ten_allows_bucket(api, "bkt", 3));
    assert_false(ten_allows_bucket(api, "pub", 3));
    assert_int_equal(ten_bucket_count(api), 2);
    assert_string_equal(ten_bucket_at(api, 0), "bkt");
    assert_string_equal(ten_bucket_at(api, 1), "other");
    assert_null(ten_bucket_at(api, 2));
    /* a tenant without a token is not found by an empty or a made-up one */
    assert_null(ten_find(s, "", 0));
    assert_true(ten_find(s, TOK_A, strlen(TOK_A)) == ten_find_name(s, "tok", 3));
    ten_destroy(&s);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_tenants_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, full, strlen(full)), (ssize_t)strlen(full));
    close(fd);
    ten_set *s = NULL;
    char err[256];
    assert_int_equal(ten_load(&s, path, err, sizeof err), 0);
    assert_int_equal(ten_count(s), 2);
    ten_destroy(&s);

    /* an error names the file */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    const char *bad = "[tenant a]\nbogus = 1\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    assert_int_equal(ten_load(&s, path, err, sizeof err), -EINVAL);
    char want[128];
    snprintf(want, sizeof want, "tenants file %s:2: unknown key 'bogus'", path);
    assert_memory_equal(err, want, strlen(want));
    unlink(path);

    assert_int_equal(ten_load(&s, "/nonexistent/tenants", err, sizeof err), -ENOENT);
    assert_string_equal(err, "cannot open tenants file /nonexistent/tenants: No such file or "
                             "directory (fix the path given to --tenants)");
    assert_int_equal(ten_load(&s, "/tmp", err, sizeof err), -EISDIR);
    assert_null(s);
    assert_int_equal(ten_load(&s, "/tmp", NULL, 0), -EISDIR);
}

/* The peer token's comparison and the loopback test of protected mode. */
static void test_token_and_loopback(void **state)
{
    (void)state;
    assert_true(ten_token_equal("peer-token-1234", 15, "peer-token-1234", 15));
    assert_false(ten_token_equal("peer-token-1234", 15, "peer-token-1235", 15));
    assert_false(ten_token_equal("peer-token-1234", 15, "peer-token-12345", 16));
    assert_false(ten_token_equal("peer-token-1234", 15, "", 0));
    assert_false(ten_token_equal("", 0, "", 0)); /* no token configured: nobody */
    const char *yes[] = {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"};
    const char *no[] = {"0.0.0.0", "::",        "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1",
                        "::2",     "localhost", "",         "127.0.0.1 "};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        assert_true(ten_addr_text_is_loopback(yes[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(ten_addr_text_is_loopback(no[i]));
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    a4.sin_addr.s_addr = htonl(0x7f000001);
    assert_true(ten_addr_is_loopback((struct sockaddr *)&a4));
    a4.sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */
    assert_false(ten_addr_is_loopback((struct sockaddr *)&a4));
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    a6.sin6_addr.s6_addr[15] = 1;
    assert_true(ten_addr_is_loopback((struct sockaddr *)&a6));
    a6.sin6_addr.s6_addr[0] = 0x20;
    assert_false(ten_addr_is_loopback((struct sockaddr *)&a6));
    assert_false(ten_addr_is_loopback(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_file),          cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_s3api_keys),         cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_token_and_loopback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
