/* SPDX-License-Identifier: Apache-2.0
 *
 * test_s3api_node.c: the cache node's S3 API (--s3-api-port) against clients
 * nobody here wrote, on three real ringcached nodes in front of s3rver behind
 * the S3 model (which counts every S3 request):
 *
 *   awscli   cp both ways of a 100 MiB object (multipart; the download costs
 *            S3 nothing: the blocks were placed from the staged parts), ls
 *            --recursive over 1,100 keys (two pages), sync both ways, get-object
 *            --range, head-object, a wrong secret (SignatureDoesNotMatch), a key
 *            outside the tenant's prefixes (AccessDenied), HTTPS on a node with
 *            a certificate
 *   boto3    ranged GETs, SigV4 and SigV2 presigned URLs fetched with curl, an
 *            expired one refused, two conditional PUTs racing (one 200, one
 *            412), anonymous reads of a public tenant's prefix only
 *   JS SDK   @aws-sdk/client-s3 with its default checksums: PutObject (CRC32
 *            header; a stream as aws-chunked with a trailing CRC32), a
 *            multipart upload of streamed parts, GetObject
 *   engine   ringcache query over s3('http://node/bucket/...') equals the same
 *            query through --cache
 *   six      six awscli readers of one cold object at once, spread over the
 *            nodes: each block filled once (S3 sends each byte once)
 *   bad      truncated aws-chunked bodies, a lying Content-Length, 10,000
 *            pipelined requests never read: 4xx, the node stays up, memory
 *            bounded
 *   ahead    read-ahead on a node of its own (4 MiB per GET, 6 MiB for the
 *            node): awscli's copy byte-exact with the read-ahead's peak
 *            within its bound; a range after range read gets the blocks past
 *            its range fetched (the next range costs S3 nothing); a client
 *            reading only the first block, by a Range or by stopping after it,
 *            does not make the node fetch the whole object
 *   kill     a node killed while awscli copies through another: the copy
 *            completes with the same bytes
 *
 * Skipped (77) without /usr/bin/aws, python3-boto3, node or the npm SDK.
 */
#include "client_test_util.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define BUCKET     H_S3_DEFAULT_BUCKET
#define AKID       "AKIDANALYTICS"
#define SECRET     "analytics/secret+key=="
#define PEER_TOKEN "peer-token-0123456789abcdef"
#define TOKEN      "tok-analytics-0123456789"

static t_cluster tc;
static h_env *files; /* the test's own files: tenants, data, outputs */
static char tenants[1024], cert[1024], key[1024];

static int setup(void **state)
{
    (void)state;
    if (access("/usr/bin/aws", X_OK) != 0)
        h_skip("/usr/bin/aws (Debian's awscli) is not installed; scripts/setup.sh installs it");
    if (h_env_create(&files, "test_s3api_node_files") < 0)
        return -1;
    if (h_env_path(files, tenants, sizeof tenants, "tenants") < 0 ||
        h_env_path(files, cert, sizeof cert, "cert.pem") < 0 ||
        h_env_path(files, key, sizeof key, "key.pem") < 0 || h_make_cert(cert, key) < 0)
        return -1;
    FILE *f = fopen(tenants, "w");
    if (!f)
        return -1;
    fprintf(f, "[tenant analytics]\n"
               "token = " TOKEN "\n"
               "allow = s3://" BUCKET "/t/\n"
               "s3api_access_key_id = " AKID "\n"
               "s3api_secret_access_key = " SECRET "\n"
               "[tenant open]\n"
               "allow = s3://" BUCKET "/pub/\n"
               "public = true\n");
    fclose(f);
    const char *extra[] = {"--tenants",     tenants,     "--peer-token",
                           PEER_TOKEN,      "--threads", "2",
                           "--s3-api-port", "0",         NULL};
    t_cluster_start(&tc, "test_s3api_node", extra);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    t_cluster_stop(&tc);
    h_env_destroy(&files);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static void endpoint_of(int node, char *ep, size_t cap)
{
    snprintf(ep, cap, "http://127.0.0.1:%d", tc.nodes[node].s3api_port);
}

static void path_of(const char *name, char path[1024])
{
    assert_int_equal(h_env_path(files, path, 1024, name), 0);
}

static void write_file(const char *name, size_t n, uint64_t seed, char path[1024])
{
    path_of(name, path);
    void *d = t_alloc_data(n, seed);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
    free(d);
}

static bool same_files(const char *a, const char *b)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static const char *const aws_env_base[] = {"AWS_DEFAULT_REGION=us-east-1",
                                           "AWS_PAGER=",
                                           "AWS_EC2_METADATA_DISABLED=true",
                                           "AWS_PROFILE",
                                           "AWS_SESSION_TOKEN",
                                           "AWS_CONFIG_FILE=/dev/null",
                                           "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                                           NULL};

/* Runs awscli against the S3 API at ep with the tenant's keys (or secret). */
static void aws_at(h_run_result *r, const char *ep, const char *secret, const char *const *args)
{
    const char *argv[40] = {"/usr/bin/aws", "--endpoint-url", ep};
    int n = 3;
    if (strncmp(ep, "https", 5) == 0) {
        argv[n++] = "--ca-bundle";
        argv[n++] = cert;
    }
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char sk[200];
    snprintf(sk, sizeof sk, "AWS_SECRET_ACCESS_KEY=%s", secret ? secret : SECRET);
    const char *set[20] = {"AWS_ACCESS_KEY_ID=" AKID, sk};
    int k = 2;
    for (int i = 0; aws_env_base[i]; i++)
        set[k++] = aws_env_base[i];
    set[k] = NULL;
    assert_int_equal(h_run(files, r, argv, set), 0);
    if (r->status != 0)
        fprintf(stderr, "aws %s %s: exit %d\n%s\n", args[0], args[1] ? args[1] : "", r->status,
                r->err);
}

static void aws(h_run_result *r, int node, const char *const *args)
{
    char ep[64];
    endpoint_of(node, ep, sizeof ep);
    aws_at(r, ep, NULL, args);
}

static int64_t metric(int node, const char *name)
{
    return t_node_metric(&tc.nodes[node], name);
}

/* ---- awscli -------------------------------------------------------------------------------- */

static void test_awscli(void **state)
{
    (void)state;
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    size_t big_size = t_size_mib(100, 24) + 12345;
    char big[1024], back[1024], small[1024], part[1024];
    write_file("big.bin", big_size, 7, big);
    write_file("small.txt", 1000, 8, small);
    path_of("big.back", back);
    path_of("part.bin", part);

    /* up: a multipart upload through n0; down through n1: not one S3 GET, the
     * blocks were placed on their owners from the parts n0 staged */
    aws(r, 0,
        (const char *[]){"s3", "cp", "--only-show-errors", big, "s3://" BUCKET "/t/big.bin", NULL});
    assert_int_equal(r->status, 0);
    assert_true(h_s3model_count(tc.model, "POST", "/" BUCKET "/t/big.bin") >=
                2); /* create, complete */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    aws(r, 1,
        (const char *[]){"s3", "cp", "--only-show-errors", "s3://" BUCKET "/t/big.bin", back,
                         NULL});
    assert_int_equal(r->status, 0);
    assert_true(same_files(big, back));
    assert_int_equal(t_s3_gets(&tc, "t/big.bin"), 0);
    assert_true(metric(1, "ringcached_s3api_bytes_served_total{source=\"peer\"}") > 0);

    /* one range, and the object's head */
    aws(r, 2,
        (const char *[]){"s3api", "get-object", "--bucket", BUCKET, "--key", "t/big.bin", "--range",
                         "bytes=1048500-1048699", part, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "\"ContentRange\": \"bytes 1048500-1048699/"));
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cmp -s -n 200 -i 1048500:0 '%s' '%s'", big, part);
    assert_int_equal(system(cmd), 0);
    struct stat sb;
    assert_int_equal(stat(part, &sb), 0);
    assert_int_equal(sb.st_size, 200);
    aws(r, 0,
        (const char *[]){"s3api", "head-object", "--bucket", BUCKET, "--key", "t/big.bin", NULL});
    assert_int_equal(r->status, 0);
    char want[64];
    snprintf(want, sizeof want, "\"ContentLength\": %zu", big_size);
    assert_non_null(strstr(r->out, want));

    /* the bucket's own operations */
    aws(r, 1, (const char *[]){"s3", "ls", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, BUCKET));
    aws(r, 1, (const char *[]){"s3api", "get-bucket-location", "--bucket", BUCKET, NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "\"LocationConstraint\": null"));
    aws(r, 2, (const char *[]){"s3api", "head-bucket", "--bucket", BUCKET, NULL});
    assert_int_equal(r->status, 0);
    aws(r, 2,
        (const char *[]){"s3api", "list-objects", "--bucket", BUCKET, "--prefix", "t/", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "\"Key\": \"t/big.bin\""));
    aws(r, 2, (const char *[]){"s3api", "list-objects", "--bucket", BUCKET, NULL});
    assert_int_not_equal(r->status, 0); /* the whole bucket is more than the tenant's */
    assert_non_null(strstr(r->err, "AccessDenied"));

    /* 1,100 keys: two pages of ListObjectsV2 */
    assert_int_equal(t_put_many(&tc.direct, BUCKET, "t/many/k", 1100, 10, 32), 0);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    aws(r, 1, (const char *[]){"s3", "ls", "s3://" BUCKET "/t/many/", "--recursive", NULL});
    assert_int_equal(r->status, 0);
    int lines = 0;
    for (const char *p = r->out; (p = strstr(p, " t/many/k")); p++)
        lines++;
    assert_int_equal(lines, 1100);
    assert_non_null(strstr(r->out, "t/many/k01099"));
    assert_true(h_s3model_count(tc.model, "GET", "/" BUCKET) >= 2);

    /* sync up, sync down, sync up again sends nothing */
    char dir[1024], dir2[1024];
    path_of("syncdir", dir);
    path_of("syncdir2", dir2);
    assert_int_equal(mkdir(dir, 0755), 0);
    for (int i = 0; i < 5; i++) {
        char name[64], p[1024];
        snprintf(name, sizeof name, "syncdir/f%d.dat", i);
        write_file(name, 3000 + (size_t)i * 100000, 20 + (uint64_t)i, p);
        /* a minute old: LastModified has whole seconds (as S3's), so a file
         * written in the second of its upload would look newer than its
         * object to the last sync, and be sent again */
        struct timespec old[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p, old, 0), 0);
    }
    aws(r, 0,
        (const char *[]){"s3", "sync", "--only-show-errors", dir, "s3://" BUCKET "/t/sync/", NULL});
    assert_int_equal(r->status, 0);
    aws(r, 2,
        (const char *[]){"s3", "sync", "--only-show-errors", "s3://" BUCKET "/t/sync/", dir2,
                         NULL});
    assert_int_equal(r->status, 0);
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s'", dir, dir2);
    assert_int_equal(system(cmd), 0);
    aws(r, 1, (const char *[]){"s3", "sync", dir, "s3://" BUCKET "/t/sync/", NULL});
    assert_int_equal(r->status, 0);
    assert_null(strstr(r->out, "upload:"));

    /* refusals: a wrong secret, a key outside the tenant's prefixes */
    char ep[64];
    endpoint_of(0, ep, sizeof ep);
    aws_at(r, ep, "not-the-secret", (const char *[]){"s3", "ls", "s3://" BUCKET "/t/", NULL});
    assert_int_not_equal(r->status, 0);
    assert_non_null(strstr(r->err, "SignatureDoesNotMatch"));
    aws(r, 0,
        (const char *[]){"s3", "cp", "--only-show-errors", small, "s3://" BUCKET "/other/x.txt",
                         NULL});
    assert_int_not_equal(r->status, 0);
    assert_non_null(strstr(r->err, "AccessDenied"));
    aws(r, 0,
        (const char *[]){"s3api", "get-object", "--bucket", BUCKET, "--key", "t/../other/x", part,
                         NULL});
    assert_int_not_equal(r->status, 0);
    assert_non_null(strstr(r->err, "AccessDenied"));
    assert_true(metric(0, "ringcached_forbidden_total") >= 3);

    /* delete: gone from S3 and the blocks of that version dropped everywhere */
    int64_t blocks_before = 0;
    for (int i = 0; i < T_NODES; i++)
        blocks_before += metric(i, "ringcached_blocks_stored");
    aws(r, 0,
        (const char *[]){"s3", "rm", "--only-show-errors", "s3://" BUCKET "/t/big.bin", NULL});
    assert_int_equal(r->status, 0);
    aws(r, 1,
        (const char *[]){"s3api", "head-object", "--bucket", BUCKET, "--key", "t/big.bin", NULL});
    assert_int_not_equal(r->status, 0);
    assert_non_null(strstr(r->err, "404"));
    int64_t blocks_after = 0;
    for (int i = 0; i < T_NODES; i++)
        blocks_after += metric(i, "ringcached_blocks_stored");
    assert_true(blocks_before - blocks_after >= (int64_t)(big_size >> 20));

    /* HTTPS on a node with a certificate (awscli then signs UNSIGNED-PAYLOAD) */
    t_node tn;
    const char *textra[] = {"--tenants",     tenants, "--tls-cert", cert, "--tls-key", key,
                            "--s3-api-port", "0",     "--threads",  "1",  NULL};
    t_node_start(tc.env, &tn, "tls0", h_s3model_endpoint(tc.model), textra);
    char eps[64];
    snprintf(eps, sizeof eps, "https://127.0.0.1:%d", tn.s3api_port);
    aws_at(r, eps, NULL,
           (const char *[]){"s3", "cp", "--only-show-errors", small, "s3://" BUCKET "/t/tls.txt",
                            NULL});
    assert_int_equal(r->status, 0);
    aws_at(r, eps, NULL,
           (const char *[]){"s3", "cp", "--only-show-errors", "s3://" BUCKET "/t/tls.txt", back,
                            NULL});
    assert_int_equal(r->status, 0);
    assert_true(same_files(small, back));
    assert_int_equal(h_proc_stop(tn.proc, 15000), 0);

    /* RAM-tier hits sent with sendfile() from the tier's pages (--sendfile
     * always: awscli is on the node's host, where it would be copied) */
    t_node sn;
    const char *sextra[] = {"--s3-api-port", "0", "--threads", "1", "--sendfile", "always", NULL};
    t_node_start(tc.env, &sn, "sf0", h_s3model_endpoint(tc.model), sextra);
    char epf[64];
    snprintf(epf, sizeof epf, "http://127.0.0.1:%d", sn.s3api_port);
    aws_at(
        r, epf, NULL,
        (const char *[]){"s3", "cp", "--only-show-errors", big, "s3://" BUCKET "/t/sf.bin", NULL});
    assert_int_equal(r->status, 0);
    for (int pass = 0; pass < 2; pass++) {
        unlink(back);
        aws_at(r, epf, NULL,
               (const char *[]){"s3", "cp", "--only-show-errors", "s3://" BUCKET "/t/sf.bin", back,
                                NULL});
        assert_int_equal(r->status, 0);
        assert_true(same_files(big, back));
    }
    assert_int_equal(h_proc_stop(sn.proc, 15000), 0);
    free(r);
}

/* ---- boto3 ---------------------------------------------------------------------------------- */

static void test_boto3(void **state)
{
    (void)state;
    if (system("/usr/bin/python3 -c 'import boto3' >/dev/null 2>&1") != 0)
        h_skip("Debian's python3-boto3 is not installed; scripts/setup.sh installs it");
    char script[1024], ep[64], ep2[64];
    assert_int_equal(h_source_path(script, sizeof script, "tests/integration/s3api/boto3_node.py"),
                     0);
    endpoint_of(1, ep, sizeof ep);
    endpoint_of(2, ep2, sizeof ep2);
    const char *argv[] = {"/usr/bin/python3", script, ep, ep2, AKID, SECRET, BUCKET,
                          h_env_dir(files),   NULL};
    const char *set[] = {"AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE",
                         "AWS_CONFIG_FILE=/dev/null",      "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                         "PYTHONDONTWRITEBYTECODE=1",      NULL};
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    assert_int_equal(h_run(files, r, argv, set), 0);
    if (r->status != 0)
        fprintf(stderr, "boto3_node.py: exit %d\n%s\n%s\n", r->status, r->out, r->err);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "ok conditional_race"));
    assert_non_null(strstr(r->out, "ok anonymous"));
    assert_non_null(strstr(r->out, "ok list_parts_abort"));
    /* ListParts and the abort reached S3 (the upload's own key, nothing else touches it) */
    assert_true(h_s3model_count(tc.model, "GET", "/" BUCKET "/t/boto/aborted") >= 1);
    assert_true(h_s3model_count(tc.model, "DELETE", "/" BUCKET "/t/boto/aborted") >= 1);
    free(r);
}

/* ---- @aws-sdk/client-s3 ------------------------------------------------------------------- */

static void test_js_sdk(void **state)
{
    (void)state;
    char script[1024], mods[1024], ep[64];
    assert_int_equal(h_source_path(script, sizeof script, "tests/integration/s3api/js_sdk.mjs"), 0);
    if (h_source_path(mods, sizeof mods, "node_modules/@aws-sdk/client-s3/package.json") < 0)
        h_skip("@aws-sdk/client-s3 is not installed (npm ci installs it from package.json)");
    endpoint_of(0, ep, sizeof ep);
    const char *argv[] = {"node", script, ep, AKID, SECRET, BUCKET, NULL};
    const char *set[] = {"AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE",
                         "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                         NULL};
    int64_t parts = metric(0, "ringcached_s3api_requests_total{op=\"UploadPart\",code=\"200\"}");
    int64_t trailers = metric(0, "ringcached_s3api_body_checks_total{check=\"checksum_trailer\"}");
    int64_t headers = metric(0, "ringcached_s3api_body_checks_total{check=\"checksum_header\"}");
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    char nodebin[64] = "/usr/bin/node";
    if (access(nodebin, X_OK) != 0)
        snprintf(nodebin, sizeof nodebin, "/usr/local/bin/node");
    argv[0] = nodebin;
    assert_int_equal(h_run(files, r, argv, set), 0);
    if (r->status != 0)
        fprintf(stderr, "js_sdk.mjs: exit %d\n%s\n%s\n", r->status, r->out, r->err);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "ok put_stream_trailer"));
    assert_non_null(strstr(r->out, "ok multipart"));
    assert_true(metric(0, "ringcached_s3api_requests_total{op=\"UploadPart\",code=\"200\"}") >=
                parts + 3);
    /* the stream and the three streamed parts came aws-chunked with a trailing CRC32,
     * the Buffer with a CRC32 header: each checked */
    assert_true(metric(0, "ringcached_s3api_body_checks_total{check=\"checksum_trailer\"}") >=
                trailers + 4);
    assert_true(metric(0, "ringcached_s3api_body_checks_total{check=\"checksum_header\"}") >=
                headers + 1);
    free(r);
}

/* ---- the engine -------------------------------------------------------------------------------- */

static void test_engine(void **state)
{
    (void)state;
    char cli[1024], pq[1024];
    if (h_build_path(cli, sizeof cli, H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    assert_int_equal(
        h_source_path(pq, sizeof pq, "tests/fuzz/corpus/parquet_footer/duck_snappy_V1.parquet"), 0);
    FILE *f = fopen(pq, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 0);
    t_put_direct(&tc, "t/pq/a.parquet", buf, n, NULL);
    t_put_direct(&tc, "t/pq/b.parquet", buf, n, NULL);
    char url[256], ep[64];
    endpoint_of(2, ep, sizeof ep);
    snprintf(url, sizeof url,
             "SELECT id, i32, d FROM s3('%s/" BUCKET "/t/pq/*.parquet') ORDER BY id, i32", ep);
    h_run_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    const char *argv1[] = {cli, "query", "--format", "TSVWithNames", url, NULL};
    const char *set1[] = {"AWS_ACCESS_KEY_ID=" AKID,
                          "AWS_SECRET_ACCESS_KEY=" SECRET,
                          "AWS_REGION=us-east-1",
                          "AWS_ENDPOINT_URL",
                          "RINGCACHE_CACHE",
                          "AWS_PROFILE",
                          NULL};
    assert_int_equal(h_run(files, a, argv1, set1), 0);
    if (a->status != 0)
        fprintf(stderr, "query through the S3 API: %s\n", a->err);
    assert_int_equal(a->status, 0);
    char cache[600], s3ep[300];
    snprintf(cache, sizeof cache, "RINGCACHE_CACHE=%s", tc.members);
    snprintf(s3ep, sizeof s3ep, "AWS_ENDPOINT_URL=%s", h_s3model_endpoint(tc.model));
    const char *sql2 =
        "SELECT id, i32, d FROM s3('s3://" BUCKET "/t/pq/*.parquet') ORDER BY id, i32";
    const char *argv2[] = {cli, "query", "--format", "TSVWithNames", sql2, NULL};
    const char *set2[] = {"AWS_ACCESS_KEY_ID=S3RVER",
                          "AWS_SECRET_ACCESS_KEY=S3RVER",
                          "AWS_REGION=us-east-1",
                          s3ep,
                          cache,
                          "RINGCACHE_TOKEN=" TOKEN,
                          "AWS_PROFILE",
                          NULL};
    assert_int_equal(h_run(files, b, argv2, set2), 0);
    if (b->status != 0)
        fprintf(stderr, "query through --cache: %s\n", b->err);
    assert_int_equal(b->status, 0);
    assert_true(strlen(a->out) > 20);
    assert_string_equal(a->out, b->out);
    free(a);
    free(b);
}

/* ---- six readers of one cold object ------------------------------------------------------------ */

static void test_six_cold_readers(void **state)
{
    (void)state;
    size_t size = t_size_mib(40, 12) + 777;
    unsigned char *data = t_alloc_data(size, 99);
    t_put_direct(&tc, "t/six/cold.bin", data, size, NULL);
    char src[1024];
    path_of("six.src", src);
    FILE *f = fopen(src, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
    free(data);
    assert_int_equal(h_s3model_reset(tc.model), 0);
    h_proc *p[6];
    char outs[6][1024];
    for (int i = 0; i < 6; i++) {
        char name[32], ep[64];
        snprintf(name, sizeof name, "six%d.out", i);
        path_of(name, outs[i]);
        endpoint_of(i % T_NODES, ep, sizeof ep);
        char *argv[] = {"/usr/bin/aws",
                        "--endpoint-url",
                        ep,
                        "s3",
                        "cp",
                        "--only-show-errors",
                        "s3://" BUCKET "/t/six/cold.bin",
                        outs[i],
                        NULL};
        char *envp[] = {"AWS_ACCESS_KEY_ID=" AKID,
                        "AWS_SECRET_ACCESS_KEY=" SECRET,
                        "AWS_DEFAULT_REGION=us-east-1",
                        "AWS_EC2_METADATA_DISABLED=true",
                        "AWS_CONFIG_FILE=/dev/null",
                        "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                        NULL};
        snprintf(name, sizeof name, "aws-six%d", i);
        assert_int_equal(h_proc_start(files, &p[i], name, argv, envp, NULL, 0), 0);
    }
    for (int i = 0; i < 6; i++) {
        int st = h_proc_wait(p[i], 300000);
        if (st != 0)
            h_proc_print_log_tail(p[i], 20);
        assert_int_equal(st, 0);
        assert_true(same_files(src, outs[i]));
    }
    int64_t blocks = (int64_t)((size + (1u << 20) - 1) >> 20);
    int64_t gets = t_s3_gets(&tc, "t/six/cold.bin");
    int64_t bytes = h_s3model_stat(tc.model, "bytes_out");
    int64_t reqs = h_s3model_stat(tc.model, "requests");
    fprintf(stderr,
            "six readers: %" PRId64 " S3 GETs for %" PRId64 " blocks, %" PRId64
            " bytes from S3 in %" PRId64 " requests for %zu\n",
            gets, blocks, bytes, reqs, size);
    /* each block filled once: a fill may take the next blocks its node owns
     * in the same ranged GET, so at most one GET per block, and S3 sent each
     * byte once (a block read twice would be 1 MiB over; heads are small) */
    assert_true(gets >= 1 && gets <= blocks);
    assert_true(bytes >= (int64_t)size);
    assert_true(bytes < (int64_t)size + reqs * 4096);
}

/* ---- malformed requests -------------------------------------------------------------------------- */

static int raw_connect(int port)
{
    int fd = h_tcp_connect(port, 5000);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until the first response's head; its status. */
static int read_status(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            break;
    }
    buf[got] = '\0';
    int status = 0;
    return sscanf(buf, "HTTP/1.1 %d", &status) == 1 ? status : -1;
}

static void test_malformed(void **state)
{
    (void)state;
    char buf[8192];
    /* a node without tenants (loopback only) takes unsigned writes: the framing
     * is what fails here, not a signature */
    t_node on;
    const char *oextra[] = {"--s3-api-port", "0", "--threads", "1", NULL};
    t_node_start(tc.env, &on, "open0", h_s3model_endpoint(tc.model), oextra);
    int port = on.s3api_port;
    /* aws-chunked bodies: framing that cannot be right (a chunk longer than its
     * size line said), and a body that stops inside a chunk */
    const char *const chunked[] = {"a\r\n12345\r\n0\r\n\r\nXYZ\r\n", "a\r\n12345"};
    for (int i = 0; i < 2; i++) {
        int fd = raw_connect(port);
        char req[1024];
        int n = snprintf(req, sizeof req,
                         "PUT /" BUCKET "/pub/chunked.bin HTTP/1.1\r\nHost: x\r\n"
                         "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\n"
                         "Content-Encoding: aws-chunked\r\nx-amz-decoded-content-length: 10\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         strlen(chunked[i]), chunked[i]);
        send_all(fd, req, (size_t)n);
        int st = read_status(fd, buf, sizeof buf);
        if (st != 400)
            fprintf(stderr, "chunked case %d: %s\n", i, buf);
        assert_int_equal(st, 400);
        assert_non_null(strstr(buf, "Content-Type: application/xml"));
        close(fd);
    }
    int fd, st;
    /* a Content-Length shorter than the body: the rest is the next request, malformed */
    fd = raw_connect(port);
    const char *lying =
        "PUT /" BUCKET "/pub/lie.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
        "helloGARBAGE that is no request\r\n\r\n";
    send_all(fd, lying, strlen(lying));
    size_t got = 0;
    for (ssize_t k; got + 1 < sizeof buf && (k = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0;)
        got += (size_t)k; /* until the node closes */
    buf[got] = '\0';
    char *ok200 = strstr(buf, "HTTP/1.1 200"), *bad400 = strstr(buf, "HTTP/1.1 400");
    assert_non_null(ok200);  /* the PUT of 5 bytes */
    assert_non_null(bad400); /* then the garbage */
    assert_true(bad400 > ok200);
    close(fd);
    /* a Content-Length longer than what comes, then the client goes away */
    fd = raw_connect(port);
    const char *short_body = "PUT /" BUCKET "/pub/short.txt HTTP/1.1\r\nHost: x\r\n"
                             "Content-Length: 100000\r\n\r\nonly this";
    send_all(fd, short_body, strlen(short_body));
    close(fd);
    /* on the tenants' nodes: anonymous outside the public prefix */
    fd = raw_connect(tc.nodes[2].s3api_port);
    const char *anon = "GET /" BUCKET "/t/big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, anon, strlen(anon));
    st = read_status(fd, buf, sizeof buf);
    assert_int_equal(st, 403);
    close(fd);
    /* 10,000 pipelined requests never read: memory stays bounded */
    unsigned char *obj = t_alloc_data(256 * 1024, 5);
    t_put_direct(&tc, "pub/pipe.bin", obj, 256 * 1024, NULL);
    free(obj);
    int64_t rss0 = t_node_rss_kib(&on);
    fd = raw_connect(port);
    int one = 1, small = 64 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    (void)one;
    const char *req = "GET /" BUCKET "/pub/pipe.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t rl = strlen(req);
    char *batch = malloc(rl * 100);
    assert_non_null(batch);
    for (int i = 0; i < 100; i++)
        memcpy(batch + (size_t)i * rl, req, rl);
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int sent = 0;
    for (int i = 0; i < 100; i++) {
        ssize_t k = send(fd, batch, rl * 100, MSG_NOSIGNAL);
        if (k <= 0)
            break; /* the node stopped reading: back-pressure */
        sent += (int)(k / (ssize_t)rl);
    }
    free(batch);
    sleep(1);
    int64_t rss1 = t_node_rss_kib(&on);
    fprintf(stderr,
            "pipelined: %d requests sent before the node stopped reading, RSS %" PRId64
            " -> %" PRId64 " KiB\n",
            sent, rss0, rss1);
    assert_true(rss1 - rss0 < 64 * 1024);
    close(fd);
    /* a node at its connection limit sheds load as S3 does: 503 SlowDown in
     * S3's XML, which SDKs retry; the connections it holds are still served */
    t_node bn;
    const char *bextra[] = {"--s3-api-port", "0", "--threads", "1", "--max-connections", "2", NULL};
    t_node_start(tc.env, &bn, "busy0", h_s3model_endpoint(tc.model), bextra);
    const char *head = "HEAD /" BUCKET "/pub/pipe.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    int held[2];
    for (int i = 0; i < 2; i++) {
        held[i] = raw_connect(bn.s3api_port);
        send_all(held[i], head, strlen(head));
        assert_int_equal(read_status(held[i], buf, sizeof buf), 200);
    }
    fd = raw_connect(bn.s3api_port);
    send_all(fd, req, rl);
    size_t bgot = 0;
    for (ssize_t k;
         bgot + 1 < sizeof buf && (k = recv(fd, buf + bgot, sizeof buf - 1 - bgot, 0)) > 0;)
        bgot += (size_t)k; /* until the node closes */
    buf[bgot] = '\0';
    assert_int_equal(strncmp(buf, "HTTP/1.1 503", 12), 0);
    assert_non_null(strstr(buf, "<Code>SlowDown</Code>"));
    assert_non_null(strstr(buf, "<RequestId>"));
    close(fd);
    send_all(held[0], head, strlen(head));
    assert_int_equal(read_status(held[0], buf, sizeof buf), 200);
    for (int i = 0; i < 2; i++)
        close(held[i]);
    assert_int_equal(h_proc_stop(bn.proc, 15000), 0);

    /* the node is up and answers */
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", port);
    aws_at(r, ep, NULL, (const char *[]){"s3", "ls", "s3://" BUCKET "/t/sync/", NULL});
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "f4.dat"));
    free(r);
    assert_int_equal(h_proc_stop(on.proc, 15000), 0);
}

/* ---- an object replaced mid-answer ------------------------------------------------------------------ */

/* A GET is pinned to one version: when the object is replaced at S3 while
 * the answer is still being sent, the answer is cut short (the connection
 * closed before Content-Length), and every byte it did carry is the old
 * version's. The client stops reading after the first MiB, so the node has
 * at most its window of blocks when the object changes. */
static void test_replaced_mid_answer(void **state)
{
    (void)state;
    t_node on;
    const char *oextra[] = {"--s3-api-port",       "0", "--threads", "1", "--s3-api-domain",
                            "s3.example.internal", NULL};
    t_node_start(tc.env, &on, "cut0", h_s3model_endpoint(tc.model), oextra);
    size_t size = 48u << 20;
    unsigned char *a = t_alloc_data(size, 31), *b = t_alloc_data(size, 32);
    t_put_direct(&tc, "pub/cut.bin", a, size, NULL);
    int fd = raw_connect(on.s3api_port);
    const char *req = "GET /" BUCKET "/pub/cut.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, req, strlen(req));
    char head[4096];
    size_t hl = 0;
    char *end = NULL;
    while (!end && hl + 1 < sizeof head) { /* byte by byte: no body bytes in head[] */
        ssize_t k = recv(fd, head + hl, 1, 0);
        assert_true(k == 1);
        head[++hl] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    assert_non_null(end);
    assert_int_equal(strncmp(head, "HTTP/1.1 200", 12), 0);
    char *cl = strstr(head, "\r\nContent-Length: ");
    if (!cl)
        cl = strstr(head, "\r\ncontent-length: ");
    assert_non_null(cl);
    assert_int_equal(strtoull(cl + 18, NULL, 10), size);
    unsigned char *got = malloc(size);
    assert_non_null(got);
    size_t n = 0;
    while (n < (1u << 20)) {
        ssize_t k = recv(fd, got + n, (1u << 20) - n, 0);
        assert_true(k > 0);
        n += (size_t)k;
    }
    t_put_direct(&tc, "pub/cut.bin", b, size, NULL); /* the new version, straight to S3 */
    ssize_t k = -1;
    while (n < size && (k = recv(fd, got + n, size - n, 0)) > 0)
        n += (size_t)k;
    fprintf(stderr, "replaced mid-answer: %zu of %zu bytes sent before the cut\n", n, size);
    assert_true(n < size);          /* cut, */
    assert_int_equal(k, 0);         /* by the node closing, not a time-out */
    assert_memory_equal(got, a, n); /* and nothing of the new version */
    close(fd);

    /* the new version, virtual-hosted style (the bucket in Host, a --s3-api-domain) */
    fd = raw_connect(on.s3api_port);
    const char *vreq = "GET /pub/cut.bin HTTP/1.1\r\nHost: " BUCKET ".s3.example.internal:9000\r\n"
                       "Range: bytes=1048570-1048579\r\n\r\n";
    send_all(fd, vreq, strlen(vreq));
    hl = 0;
    end = NULL;
    while (!end && hl + 1 < sizeof head) {
        k = recv(fd, head + hl, 1, 0);
        assert_true(k == 1);
        head[++hl] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    assert_int_equal(strncmp(head, "HTTP/1.1 206", 12), 0);
    for (n = 0; n < 10 && (k = recv(fd, got + n, 10 - n, 0)) > 0;)
        n += (size_t)k;
    assert_int_equal(n, 10);
    assert_memory_equal(got, b + 1048570, 10);
    close(fd);
    free(got);
    free(a);
    free(b);
    assert_int_equal(h_proc_stop(on.proc, 15000), 0);
}

/* ---- read-ahead ---------------------------------------------------------------------------- */

/* Waits (at most 60 s) until the node's read-ahead holds nothing. */
static void ahead_settled(const t_node *on)
{
    int64_t t0 = h_now_ms();
    while (t_node_metric(on, "ringcached_s3api_readahead_inflight_bytes") != 0 &&
           h_now_ms() - t0 < 60000)
        usleep(20000);
    assert_int_equal(t_node_metric(on, "ringcached_s3api_readahead_inflight_bytes"), 0);
}

/* awscli's s3api get-object of bytes [a, b] of key on the node at ep into out. */
static void aws_range(h_run_result *r, const char *ep, const char *name, uint64_t a, uint64_t b,
                      const char *out)
{
    char range[64];
    snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, a, b);
    aws_at(r, ep, NULL,
           (const char *[]){"s3api", "get-object", "--bucket", BUCKET, "--key", name, "--range",
                            range, out, NULL});
    assert_int_equal(r->status, 0);
}

static void test_readahead(void **state)
{
    (void)state;
    const uint64_t mib = 1u << 20;
    t_node on;
    const char *oextra[] = {
        "--s3-api-port",          "0",    "--threads", "2", "--s3-api-readahead", "4MiB",
        "--s3-api-readahead-max", "6MiB", NULL};
    t_node_start(tc.env, &on, "ahead0", h_s3model_endpoint(tc.model), oextra);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", on.s3api_port);
    h_run_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    size_t size = 64 * mib + 1234;
    unsigned char *data = t_alloc_data(size, 77);
    t_put_direct(&tc, "ra/big.bin", data, size, NULL);
    t_put_direct(&tc, "ra/first.bin", data, size, NULL);
    t_put_direct(&tc, "ra/stop.bin", data, size, NULL);
    t_put_direct(&tc, "ra/seq.bin", data, size, NULL);
    char src[1024], out[1024];
    path_of("ra.src", src);
    path_of("ra.out", out);
    FILE *f = fopen(src, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);

    /* awscli's copy (8 MiB ranges, ten at once): byte-exact, read ahead, and
     * never more ahead than the node's bound */
    aws_at(r, ep, NULL,
           (const char *[]){"s3", "cp", "--only-show-errors", "s3://" BUCKET "/ra/big.bin", out,
                            NULL});
    assert_int_equal(r->status, 0);
    assert_true(same_files(src, out));
    ahead_settled(&on);
    int64_t ra = t_node_metric(&on, "ringcached_s3api_readahead_bytes_total");
    int64_t peak = t_node_metric(&on, "ringcached_s3api_readahead_peak_bytes");
    fprintf(stderr, "read-ahead: %" PRId64 " bytes, peak %" PRId64 "\n", ra, peak);
    assert_true(ra > 0);
    assert_true(peak > 0 && peak <= (int64_t)(6 * mib));

    /* the first block only, by a Range: S3 sends that block and no other */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    aws_range(r, ep, "ra/first.bin", 0, mib - 1, out);
    ahead_settled(&on);
    int64_t bytes = h_s3model_stat(tc.model, "bytes_out");
    fprintf(stderr, "first block by a Range: %" PRId64 " bytes from S3\n", bytes);
    assert_true(bytes >= (int64_t)mib && bytes < (int64_t)(mib + mib / 16));

    /* the whole object asked for, the first block read, then nothing: the
     * node holds its read-ahead and output buffer, not the object */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int rcv = 64 * 1024;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)on.s3api_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    const char *req = "GET /" BUCKET "/ra/stop.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, req, strlen(req));
    unsigned char *got = malloc(2 * mib);
    assert_non_null(got);
    size_t n = 0;
    while (n < mib) {
        ssize_t k = recv(fd, got + n, 2 * mib - n, 0);
        assert_true(k > 0);
        n += (size_t)k;
    }
    usleep(1500000); /* what a node that read the whole object would have done by now */
    bytes = h_s3model_stat(tc.model, "bytes_out");
    fprintf(stderr, "first block of a whole GET, then a stop: %" PRId64 " bytes from S3\n", bytes);
    assert_true(bytes >= (int64_t)mib && bytes < (int64_t)(size / 2));
    close(fd);
    free(got);
    ahead_settled(&on);

    /* range after range: the second range goes on from the first, so the
     * blocks past it are fetched too, and the third costs S3 nothing */
    assert_int_equal(h_s3model_reset(tc.model), 0);
    aws_range(r, ep, "ra/seq.bin", 0, 2 * mib - 1, out);
    ahead_settled(&on);
    int64_t before = h_s3model_stat(tc.model, "bytes_out");
    assert_true(before < (int64_t)(3 * mib));
    aws_range(r, ep, "ra/seq.bin", 2 * mib, 4 * mib - 1, out);
    ahead_settled(&on);
    bytes = h_s3model_stat(tc.model, "bytes_out");
    fprintf(stderr, "two ranges: %" PRId64 " bytes from S3\n", bytes);
    assert_true(bytes >= (int64_t)(6 * mib));           /* 4 MiB read, 2 MiB ahead at least */
    assert_true(bytes < (int64_t)(8 * mib + mib / 16)); /* at most 4 MiB ahead */
    const char *from_s3 = "ringcached_s3api_bytes_served_total{source=\"s3\"}";
    int64_t s3_served = t_node_metric(&on, from_s3);
    aws_range(r, ep, "ra/seq.bin", 4 * mib, 6 * mib - 1, out);
    assert_int_equal(t_node_metric(&on, from_s3), s3_served); /* all of it from the cache */
    f = fopen(out, "rb");
    assert_non_null(f);
    got = malloc(2 * mib);
    assert_non_null(got);
    assert_int_equal(fread(got, 1, 2 * mib, f), 2 * mib);
    fclose(f);
    assert_memory_equal(got, data + 4 * mib, 2 * mib);
    free(got);
    free(data);
    free(r);
    assert_int_equal(h_proc_stop(on.proc, 15000), 0);
}

/* ---- a node killed mid-copy ------------------------------------------------------------------------- */

static void test_node_killed(void **state)
{
    (void)state;
    size_t size = t_size_mib(64, 16) + 4321;
    unsigned char *data = t_alloc_data(size, 123);
    t_put_direct(&tc, "t/kill/obj.bin", data, size, NULL);
    char src[1024], out[1024];
    path_of("kill.src", src);
    path_of("kill.out", out);
    FILE *f = fopen(src, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
    free(data);
    /* slow S3 down so that the copy is still running when n2 dies */
    assert_int_equal(h_s3model_config(tc.model, 20, 40), 0);
    char ep[64];
    endpoint_of(0, ep, sizeof ep);
    char *argv[] = {"/usr/bin/aws",
                    "--endpoint-url",
                    ep,
                    "s3",
                    "cp",
                    "--only-show-errors",
                    "s3://" BUCKET "/t/kill/obj.bin",
                    out,
                    NULL};
    char *envp[] = {"AWS_ACCESS_KEY_ID=" AKID,
                    "AWS_SECRET_ACCESS_KEY=" SECRET,
                    "AWS_DEFAULT_REGION=us-east-1",
                    "AWS_EC2_METADATA_DISABLED=true",
                    "AWS_CONFIG_FILE=/dev/null",
                    "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
                    NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(files, &p, "aws-kill", argv, envp, NULL, 0), 0);
    /* kill n2 once n0 has served part of the object */
    int64_t t0 = h_now_ms();
    while (metric(0, "ringcached_bytes_served_total") < (int64_t)(size / 8) &&
           h_now_ms() - t0 < 60000 && h_proc_wait(p, 50) == -ETIMEDOUT)
        ;
    assert_int_equal(h_proc_wait(p, 0), -ETIMEDOUT); /* still copying */
    assert_int_equal(h_proc_kill(tc.nodes[2].proc, SIGKILL), 0);
    h_proc_wait(tc.nodes[2].proc, 5000);
    tc.nodes[2].proc = NULL; /* gone: not stopped again at the end */
    int st = h_proc_wait(p, 300000);
    if (st != 0)
        h_proc_print_log_tail(p, 20);
    assert_int_equal(st, 0);
    assert_true(same_files(src, out));
    assert_int_equal(h_s3model_config(tc.model, 0, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awscli),
        cmocka_unit_test(test_boto3),
        cmocka_unit_test(test_js_sdk),
        cmocka_unit_test(test_engine),
        cmocka_unit_test(test_six_cold_readers),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_replaced_mid_answer),
        cmocka_unit_test(test_readahead),
        cmocka_unit_test(test_node_killed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
