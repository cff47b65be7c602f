/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_progress.c: what a person sees while and after a query runs:
 * ClickHouse's progress line on a terminal (every 100 ms after the first
 * half second) and its summary ("N rows in set. Elapsed: ... Peak memory
 * usage: ...").
 */
#include "exec_int.h"

#include <stdio.h>
#include <time.h>

double eng__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void human_count(double v, char *buf, size_t cap)
{
    if (v >= 1e12)
        snprintf(buf, cap, "%.2f trillion", v / 1e12);
    else if (v >= 1e9)
        snprintf(buf, cap, "%.2f billion", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, cap, "%.2f million", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, cap, "%.2f thousand", v / 1e3);
    else
        snprintf(buf, cap, "%.0f", v);
}

void eng_format_bytes(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int k = 0;
    while (v >= 1000 && k < 5) {
        v /= 1000;
        k++;
    }
    if (k == 0)
        snprintf(buf, cap, "%.0f %s", v, u[k]);
    else
        snprintf(buf, cap, "%.2f %s", v, u[k]);
}

static void human_bytes2(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(buf, cap, "%.2f %s", v, u[k]);
}

void eng_print_summary(FILE *f, const eng_result *r)
{
    char rows[64], bytes[64], rr[64], br[64], mem[64];
    double el = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;
    human_count((double)r->rows_read, rows, sizeof(rows));
    eng_format_bytes((double)r->bytes_read, bytes, sizeof(bytes));
    human_count((double)r->rows_read / el, rr, sizeof(rr));
    eng_format_bytes((double)r->bytes_read / el, br, sizeof(br));
    human_bytes2((double)r->peak_memory, mem, sizeof(mem));
    fprintf(f,
            "%llu row%s in set. Elapsed: %.3f sec. Processed %s rows, %s (%s rows/s., %s/s.)\n"
            "Peak memory usage: %s.\n",
            (unsigned long long)r->rows_out, r->rows_out == 1 ? "" : "s", r->elapsed_s, rows, bytes,
            rr, br, mem);
}

static void draw_locked(equery *q, bool clear)
{
    FILE *f = q->ctx->progress;
    if (clear) {
        fputs("\r\033[K", f);
        fflush(f);
        return;
    }
    double el = eng__now_s() - q->t0;
    char rows[64], bytes[64], rr[64], br[64];
    uint64_t r = atomic_load(&q->stats.rows_read), b = atomic_load(&q->stats.bytes_read);
    human_count((double)r, rows, sizeof(rows));
    eng_format_bytes((double)b, bytes, sizeof(bytes));
    human_count((double)r / (el > 0 ? el : 1), rr, sizeof(rr));
    eng_format_bytes((double)b / (el > 0 ? el : 1), br, sizeof(br));
    int pct = q->n_units ? (int)(100.0 * atomic_load(&q->units_done) / q->n_units) : 0;
    fprintf(f, "\r\033[K↓ Progress: %s rows, %s (%s rows/s., %s/s.) %3d%%", rows, bytes, rr, br,
            pct);
    fflush(f);
}

/* The line shares the terminal with rows streamed to standard output: it is
 * drawn and cleared under out_mu, and a block of rows clears it first. */
void eng__progress_line(equery *q, bool clear)
{
    if (!q->ctx->progress)
        return;
    pthread_mutex_lock(&q->out_mu);
    draw_locked(q, clear);
    q->progress_shown = !clear;
    pthread_mutex_unlock(&q->out_mu);
}

void eng__progress_clear_locked(equery *q)
{
    if (q->progress_shown) {
        draw_locked(q, true);
        q->progress_shown = false;
    }
}
