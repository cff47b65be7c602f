/* SPDX-License-Identifier: Apache-2.0
 *
 * test_admin.c: the admin HTTP server (cached/admin.h) over real sockets with
 * libcurl: started on port 0 with a port file, every endpoint's status and
 * body, HEAD, 404 and 405, /metrics parsed line by line as Prometheus text, a
 * port in use, bad settings, and HTTPS with a CA made by the test (the right
 * CA succeeds, another CA fails, a mismatched key is refused at start).
 */
#include "admin.h"
#include "harness.h"
#include "metrics.h"

#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

typedef struct resp {
    long code;
    char *body;
    size_t len;
    char ctype[128];
    char allow[64];
    char clen[32];
    CURLcode cc;
} resp;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    resp *r = arg;
    char *nb = realloc(r->body, r->len + sz * n + 1);
    if (nb == NULL)
        return 0;
    r->body = nb;
    memcpy(r->body + r->len, p, sz * n);
    r->len += sz * n;
    r->body[r->len] = '\0';
    return sz * n;
}

static void header_value(const char *line, size_t n, const char *name, char *dst, size_t cap)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0)
        return;
    const char *v = line + nl;
    size_t vl = n - nl;
    while (vl > 0 && *v == ' ') {
        v++;
        vl--;
    }
    while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    snprintf(dst, cap, "%.*s", (int)vl, v);
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    resp *r = arg;
    header_value(p, sz * n, "Allow:", r->allow, sizeof r->allow);
    header_value(p, sz * n, "Content-Length:", r->clen, sizeof r->clen);
    return sz * n;
}

/* method: "GET", "HEAD" or any custom one; ca: NULL for http */
static resp request(const char *method, int port, const char *path, const char *ca)
{
    resp r = {0};
    r.body = calloc(1, 1);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char url[256];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", ca ? "https" : "http", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (ca != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    r.cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(r.ctype, sizeof r.ctype, "%s", ct ? ct : "");
    curl_easy_cleanup(c);
    return r;
}

static resp get(int port, const char *path)
{
    resp r = request("GET", port, path, NULL);
    assert_int_equal(r.cc, CURLE_OK);
    return r;
}

static int config_text(void *arg, char **out, size_t *len)
{
    const char *text = arg;
    if (text == NULL)
        return -ENOMEM;
    *out = strdup(text);
    *len = strlen(text);
    return *out ? 0 : -ENOMEM;
}

typedef struct fix {
    char dir[64];
    char port_file[96];
    met_registry *m;
    int hits, inflight, lat;
} fix;

static int setup(void **state)
{
    fix *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_admin_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->port_file, sizeof f->port_file, "%s/admin.port", f->dir);
    assert_int_equal(met_create(&f->m, 2), 0);
    static const met_def d[] = {
        {"ringcached_hits_total", "Blocks served from the cache.", MET_COUNTER, "tier=\"ram\""},
        {"ringcached_hits_total", "Blocks served from the cache.", MET_COUNTER, "tier=\"ssd\""},
        {"ringcached_io_inflight", "I/O in flight.", MET_GAUGE, NULL},
        {"ringcached_request_seconds", "Request latency.", MET_HISTOGRAM, "op=\"get\""},
    };
    f->hits = met_register(f->m, d, 4);
    assert_int_equal(f->hits, 0);
    f->inflight = 2;
    f->lat = 3;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix *f = *state;
    met_destroy(&f->m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static int read_port_file(const char *path)
{
    FILE *pf = fopen(path, "r");
    assert_non_null(pf);
    int port = -1;
    char nl = 0;
    assert_int_equal(fscanf(pf, "%d%c", &port, &nl), 2);
    assert_int_equal(nl, '\n');
    fclose(pf);
    return port;
}

/* Every non-comment line is `name{labels} value`; every sample's family has a
 * # TYPE line before it. Returns the number of samples. */
static int check_prometheus(const char *text)
{
    regex_t sample, type;
    assert_int_equal(regcomp(&sample,
                             "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\""
                             "(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*\\})? "
                             "(-?[0-9]+(\\.[0-9]+)?|\\+Inf|-Inf|NaN)$",
                             REG_EXTENDED),
                     0);
    assert_int_equal(regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$",
                             REG_EXTENDED),
                     0);
    char *copy = strdup(text);
    char families[64][96];
    int nfam = 0, samples = 0;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        regmatch_t m[2];
        if (strncmp(line, "# HELP ", 7) == 0)
            continue;
        if (line[0] == '#') {
            assert_int_equal(regexec(&type, line, 2, m, 0), 0);
            assert_true(nfam < 64);
            snprintf(families[nfam++], sizeof families[0], "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
                     line + m[1].rm_so);
            continue;
        }
        if (regexec(&sample, line, 2, m, 0) != 0)
            fail_msg("not a Prometheus sample line: '%s'", line);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
        bool known = false;
        for (int i = 0; i < nfam && !known; i++) {
            size_t fl = strlen(families[i]);
            known = strcmp(name, families[i]) == 0 ||
                    (strncmp(name, families[i], fl) == 0 &&
                     (strcmp(name + fl, "_bucket") == 0 || strcmp(name + fl, "_sum") == 0 ||
                      strcmp(name + fl, "_count") == 0));
        }
        if (!known)
            fail_msg("sample '%s' has no # TYPE line before it", line);
        samples++;
    }
    free(copy);
    regfree(&sample);
    regfree(&type);
    return samples;
}

static void test_endpoints(void **state)
{
    fix *f = *state;
    adm_config cfg = {.addr = "127.0.0.1", .port = 0, .port_file = f->port_file};
    adm_server *a = NULL;
    char err[256];
    const char *conf = "port = 7070\ntoken = <redacted>\n";
    assert_int_equal(adm_start(&a, &cfg, f->m, config_text, (void *)conf, err, sizeof err), 0);
    int port = adm_port(a);
    assert_true(port > 0);
    assert_int_equal(read_port_file(f->port_file), port);

    resp r = get(port, "/healthz");
    assert_int_equal(r.code, 200);
    assert_string_equal(r.body, "ok\n");
    free(r.body);

    r = get(port, "/readyz");
    assert_int_equal(r.code, 503);
    assert_string_equal(r.body, "not ready: starting\n");
    free(r.body);
    adm_set_not_ready_reason(a, "opening the block store\n(2 of 3 files)");
    r = get(port, "/readyz");
    assert_int_equal(r.code, 503);
    assert_string_equal(r.body, "not ready: opening the block store (2 of 3 files)\n");
    free(r.body);
    adm_set_ready(a, true);
    r = get(port, "/readyz");
    assert_int_equal(r.code, 200);
    assert_string_equal(r.body, "ready\n");
    free(r.body);
    adm_set_ready(a, false);
    r = get(port, "/readyz");
    assert_int_equal(r.code, 503);
    free(r.body);

    r = get(port, "/config");
    assert_int_equal(r.code, 200);
    assert_string_equal(r.body, conf);
    assert_string_equal(r.ctype, "text/plain; charset=utf-8");
    free(r.body);

    met_add(f->m, 0, f->hits, 41);
    met_add(f->m, met_shared_slot(f->m), f->hits, 1);
    met_add(f->m, 1, f->hits + 1, 5);
    met_set(f->m, f->inflight, 3);
    met_observe_us(f->m, 0, f->lat, 120);
    r = get(port, "/metrics?name[]=x");
    assert_int_equal(r.code, 200);
    assert_memory_equal(r.ctype, "text/plain; version=0.0.4", 25);
    assert_int_equal(check_prometheus(r.body), 2 + 1 + 18 + 2);
    assert_non_null(strstr(r.body, "\nringcached_hits_total{tier=\"ram\"} 42\n"));
    assert_non_null(strstr(r.body, "\nringcached_hits_total{tier=\"ssd\"} 5\n"));
    assert_non_null(strstr(r.body, "\nringcached_io_inflight 3\n"));
    assert_non_null(
        strstr(r.body, "ringcached_request_seconds_bucket{op=\"get\",le=\"0.00025\"} 1\n"));
    /* one HELP per family even with two label sets */
    const char *h = strstr(r.body, "# HELP ringcached_hits_total");
    assert_non_null(h);
    assert_null(strstr(h + 1, "# HELP ringcached_hits_total"));
    free(r.body);

    static const char *const missing[] = {"/", "/metrics/", "/nope", "/healthzz", "/config/x"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        r = get(port, missing[i]);
        assert_int_equal(r.code, 404);
        free(r.body);
    }

    static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        r = request(methods[i], port, "/metrics", NULL);
        assert_int_equal(r.cc, CURLE_OK);
        assert_int_equal(r.code, 405);
        assert_string_equal(r.allow, "GET, HEAD");
        free(r.body);
    }

    r = request("HEAD", port, "/healthz", NULL);
    assert_int_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_int_equal(r.len, 0);
    assert_string_equal(r.clen, "3");
    free(r.body);
    r = request("HEAD", port, "/readyz", NULL);
    assert_int_equal(r.code, 503);
    free(r.body);
    /* HEAD then GET on one kept-alive connection: the HEAD answer carried no
     * body, or the GET would read it as its own answer */
    {
        resp k = {0};
        CURL *c = curl_easy_init();
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/config", port);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &k);
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        assert_int_equal(curl_easy_perform(c), CURLE_OK);
        assert_int_equal(k.len, 0);
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        assert_int_equal(curl_easy_perform(c), CURLE_OK);
        long connects = -1;
        curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
        assert_int_equal(connects, 0); /* reused */
        assert_int_equal(k.len, strlen(conf));
        assert_memory_equal(k.body, conf, k.len);
        curl_easy_cleanup(c);
        free(k.body);
    }

    adm_stop(&a);
    assert_null(a);
    adm_stop(&a);
    adm_stop(NULL);
    /* nothing listens any more */
    r = request("GET", port, "/healthz", NULL);
    assert_int_equal(r.cc, CURLE_COULDNT_CONNECT);
    free(r.body);
}

static void test_no_registry_no_config(void **state)
{
    (void)state;
    adm_config cfg = {.addr = NULL, .port = 0};
    adm_server *a = NULL;
    assert_int_equal(adm_start(&a, &cfg, NULL, NULL, NULL, NULL, 0), 0);
    resp r = get(adm_port(a), "/metrics");
    assert_int_equal(r.code, 200);
    assert_int_equal(r.len, 0);
    free(r.body);
    r = get(adm_port(a), "/config");
    assert_int_equal(r.code, 404);
    free(r.body);
    adm_stop(&a);

    /* a failing config callback is a 500, the server goes on */
    assert_int_equal(adm_start(&a, &cfg, NULL, config_text, NULL, NULL, 0), 0);
    r = get(adm_port(a), "/config");
    assert_int_equal(r.code, 500);
    assert_string_equal(r.body, "cannot format the config: Cannot allocate memory\n");
    free(r.body);
    r = get(adm_port(a), "/healthz");
    assert_int_equal(r.code, 200);
    free(r.body);
    adm_stop(&a);
}

static void test_start_errors(void **state)
{
    fix *f = *state;
    adm_config cfg = {.addr = "127.0.0.1", .port = 0};
    adm_server *a = NULL, *b = (adm_server *)0x1;
    char err[256];
    assert_int_equal(adm_start(&a, &cfg, NULL, NULL, NULL, err, sizeof err), 0);

    cfg.port = adm_port(a);
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EADDRINUSE);
    assert_null(b);
    char want[128];
    snprintf(want, sizeof want, "admin port 127.0.0.1:%d is in use (set --admin-port)", cfg.port);
    assert_string_equal(err, want);
    adm_stop(&a);

    cfg.port = 70000;
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EINVAL);
    assert_string_equal(err, "admin port 70000 is out of range (set --admin-port to 0..65535)");

    cfg.port = 0;
    cfg.addr = "300.1.1.1";
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "cannot resolve the admin address 300.1.1.1"));

    cfg.addr = "192.0.2.1"; /* TEST-NET: not an address of this machine */
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EADDRNOTAVAIL);
    assert_non_null(strstr(err, "cannot bind the admin port 192.0.2.1:0"));

    cfg.addr = "127.0.0.1";
    char bad[128];
    snprintf(bad, sizeof bad, "%s/no/such/dir/port", f->dir);
    cfg.port_file = bad;
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "cannot write the admin port file"));
    assert_null(b);

    cfg.port_file = NULL;
    cfg.tls_cert = "/nonexistent.pem";
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "needs both a certificate and a key"));
    cfg.tls_key = "/nonexistent.key";
    assert_int_equal(adm_start(&b, &cfg, NULL, NULL, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "cannot load the admin TLS certificate /nonexistent.pem"));
}

/* ---- TLS: a self-signed certificate for 127.0.0.1, made here ------------ */

static void test_tls(void **state)
{
    fix *f = *state;
    char cert[128], key[128], other_cert[128], other_key[128];
    snprintf(cert, sizeof cert, "%s/admin.pem", f->dir);
    snprintf(key, sizeof key, "%s/admin.key", f->dir);
    snprintf(other_cert, sizeof other_cert, "%s/other.pem", f->dir);
    snprintf(other_key, sizeof other_key, "%s/other.key", f->dir);
    assert_int_equal(h_make_cert(cert, key), 0);
    assert_int_equal(h_make_cert(other_cert, other_key), 0);

    adm_config cfg = {.addr = "127.0.0.1", .port = 0, .tls_cert = cert, .tls_key = key};
    adm_server *a = NULL;
    char err[256];
    const char *conf = "tls = true\n";
    assert_int_equal(adm_start(&a, &cfg, f->m, config_text, (void *)conf, err, sizeof err), 0);
    int port = adm_port(a);

    resp r = request("GET", port, "/config", cert);
    assert_int_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 200);
    assert_string_equal(r.body, conf);
    free(r.body);
    r = request("GET", port, "/metrics", cert);
    assert_int_equal(r.cc, CURLE_OK);
    assert_true(check_prometheus(r.body) > 0);
    free(r.body);

    /* a client trusting another CA fails verification */
    r = request("GET", port, "/healthz", other_cert);
    assert_true(r.cc == CURLE_PEER_FAILED_VERIFICATION || r.cc == CURLE_SSL_CACERT);
    free(r.body);
    /* plain HTTP to the TLS port gets no HTTP answer */
    r = request("GET", port, "/healthz", NULL);
    assert_int_not_equal(r.code, 200);
    free(r.body);
    /* and the server still serves TLS clients afterwards */
    r = request("GET", port, "/healthz", cert);
    assert_int_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 200);
    free(r.body);
    adm_stop(&a);

    /* a key that is not the certificate's */
    cfg.tls_key = other_key;
    assert_int_equal(adm_start(&a, &cfg, NULL, NULL, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "does not match the certificate"));
    assert_null(a);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_endpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_registry_no_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
