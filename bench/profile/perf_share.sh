#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# perf_share.sh DATA [CPU_S_PER_GIB]: where the CPU of one profiled phase goes
# (a perf.data written by bench_profile.h's bench_perf_start), as a Markdown
# table: each process kind (the client's threads, the cache nodes, nginx) by
# what its samples were spent on. Samples are cpu-clock (this VM has no
# hardware counters); shares are of all the phase's samples, so the rows add
# up to 100%. With CPU_S_PER_GIB (the phase's CPU-seconds per GiB, measured
# beside) each share is also given in CPU-seconds per GiB.
#
# Categories, by symbol (first match wins):
#   copy        memcpy/memmove, the kernel's copies to and from user memory
#   checksum    XXH*, csum*, crc*
#   faults      page faults, zeroing, mapping and freeing pages
#   locks       mutexes, futexes, spin locks, condition variables
#   spin        sched_yield and the clock reads of a polling loop
#   net         the TCP/IP stack and the socket layer below the copies
#   syscall     entering and leaving the kernel, epoll, poll, the eventfd
#   sched       the scheduler: switching, waking, idle
#   pagecache   the client's page cache (pc_*)
#   alloc       malloc and free
#   event       libevent (event_*, evbuffer_*, bufferevent_*)
#   ringcache   the rest of ours (rc_*, rcl_*, cc_*, sc_*, rcp_*, bkey_*, node_*, bs_*, ring_*)
#   other       everything else
set -euo pipefail
data=${1:?usage: perf_share.sh DATA [CPU_S_PER_GIB]}
gib=${2:-}
perf report -i "$data" --no-children --sort comm,sym --stdio -g none --percent-limit 0 2>/dev/null |
awk -v gib="$gib" '
function kind(comm) {
  if (comm ~ /^ringcached|^node-|^bs-|^rc-w|^worker/) return "node";
  if (comm ~ /^nginx/) return "nginx";
  return "client";
}
function cat(sym) {
  if (sym ~ /memcpy|memmove|copy_user|_copy_to_iter|_copy_from_iter|copyout|copyin|rep_movs|copy_page|skb_copy_datagram|copy_to_user|copy_from_user/) return "copy";
  if (sym ~ /XXH|xxh|csum|crc32|crc_/) return "checksum";
  if (sym ~ /clear_page|page_fault|handle_mm_fault|do_anonymous_page|alloc_pages|free_pages|zap_|unmap|__mmap|mprotect|madvise|get_page_from_freelist|rmqueue|free_unref|folio|pte_|lru_|memcg|mem_cgroup/) return "faults";
  if (sym ~ /pthread_mutex|futex|lll_lock|lll_unlock|spin_lock|spin_unlock|pthread_cond|queued_spin|__lll_/) return "locks";
  if (sym ~ /sched_yield|do_sched_yield|clock_gettime|__vdso|vdso|read_tsc|ktime_get/) return "spin";
  if (sym ~ /^tcp_|^__tcp|^ip_|^__ip|^ipv4|skb|^sk_|^__sk|^sock_|^__sock|netif|net_rx|dev_queue|loopback|^__dev|nf_|^inet|release_sock|lock_sock|__release_sock|validate_xmit|dst_|raw_local|__napi|napi_|process_backlog|__netif|tcp_v4|__inet|^__local_bh|do_softirq|__do_softirq|irq_exit|_raw_read/) return "net";
  if (sym ~ /entry_SYSCALL|syscall|do_syscall|__x64_sys|ep_|epoll|do_epoll|__fget|fput|fdget|__fdget|eventfd|poll|select|^read$|^write$|^__libc_read|^__libc_write|readv|writev|sendmsg|recvmsg|__GI___|vfs_read|vfs_write|do_iter|import_iovec|iovec|rw_verify|security_|apparmor|__cond_resched|exit_to_user|syscall_exit|__rseq|rseq_|switch_fpu|restore_fpregs|fpregs|mutex_unlock|mutex_lock|__x86_return|srso_|retbleed|__put_user|__get_user/) return "syscall";
  if (sym ~ /schedule|switch_to|finish_task|pick_next|enqueue|dequeue|ttwu|wake_up|try_to_wake|update_curr|update_load|select_task|cpuidle|idle|native_safe_halt|default_idle|psi_|newidle|load_balance|__switch|update_rq|set_next|put_prev|check_preempt|resched|hrtimer|tick_|timerqueue/) return "sched";
  if (sym ~ /^pc_|pagecache/) return "pagecache";
  if (sym ~ /malloc|^free|_int_free|_int_malloc|calloc|realloc|cfree|tcache|malloc_consolidate|unlink_chunk|posix_memalign|_mid_memalign|memalign/) return "alloc";
  if (sym ~ /^event_|^evbuffer|^bufferevent|^evutil|^ev[a-z_]*|^min_heap|^timeout_|^evmap|^epoll_dispatch/) return "event";
  if (sym ~ /^rc_|^rc__|^rcl_|^cc_|^sc_|^rcp_|^bkey_|^node_|^node__|^bs_|^bs__|^ring_|^conn_|^answer_|^dispatch|^store_|^get_from|^do_get|^chunk_/) return "ringcache";
  return "other";
}
/^#/ || NF < 3 { next }
{
  pct = $1; sub(/%/, "", pct);
  comm = $2;
  # the symbol follows "[k]" or "[.]"
  sym = "";
  for (i = 3; i <= NF; i++) if ($i == "[k]" || $i == "[.]") { sym = $(i + 1); break; }
  if (sym == "") sym = $NF;
  k = kind(comm); c = cat(sym);
  share[k, c] += pct; total[k] += pct; ctot[c] += pct; all += pct;
  kinds[k] = 1;
}
END {
  n = split("copy checksum faults locks spin net syscall sched pagecache alloc event ringcache other", cats, " ");
  printf("| process |");
  for (i = 1; i <= n; i++) printf(" %s |", cats[i]);
  printf(" all |\n|---|");
  for (i = 1; i <= n; i++) printf("---|");
  printf("---|\n");
  split("client node nginx", order, " ");
  for (o = 1; o <= 3; o++) {
    k = order[o];
    if (!(k in kinds)) continue;
    printf("| %s |", k);
    for (i = 1; i <= n; i++) {
      v = share[k, cats[i]] / all * 100;
      if (gib != "") printf(" %.1f%% (%.2f) |", v, v / 100 * gib); else printf(" %.1f%% |", v);
    }
    v = total[k] / all * 100;
    if (gib != "") printf(" %.1f%% (%.2f) |\n", v, v / 100 * gib); else printf(" %.1f%% |\n", v);
  }
}'
