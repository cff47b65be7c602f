#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test.sh: the README's test command. Installs what is missing (scripts/setup.sh),
# then runs the whole suite in stages, printing the time of each:
#   release  Release build of everything (benchmarks too), warnings as errors,
#            unit + integration tests
#   asan     ASan+UBSan build of the test binaries, unit + integration tests
#   tsan     TSan build of the `threads` tests' binaries, the `threads` label
#   fuzz     clang libFuzzer build of the fuzz targets, each run for
#            RINGCACHE_FUZZ_SECONDS (15), nproc targets at a time
# Stages can be chosen: scripts/test.sh release asan. Safe to run again: builds
# are incremental (build/<stage>), tests use their own temp folders.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

stages=("$@")
((${#stages[@]})) || stages=(release asan tsan fuzz)
jobs=$(nproc)
fuzz_seconds=${RINGCACHE_FUZZ_SECONDS:-15}

bash scripts/setup.sh

declare -a summary
stage_start=0
begin() { stage_start=$(date +%s); echo; echo "=== stage $1: $2"; }
end() {
  local t=$(( $(date +%s) - stage_start ))
  summary+=("$1: ${t}s")
  echo "=== stage $1 done in ${t}s"
}

configure() { # dir, cmake args...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DRINGCACHE_WERROR=ON "$@" > "$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; return 1; }
}

build() { # dir [target...]: the targets given, or everything
  local dir=$1; shift
  local targets=()
  (($#)) && targets=(--target "$@")
  local t0=$SECONDS
  if ! cmake --build "$dir" -j "$jobs" "${targets[@]}" > "$dir.build.log" 2>&1; then
    grep -E 'error|warning|undefined' "$dir.build.log" | head -40
    echo "build failed in $dir (full log: $dir.build.log)" >&2
    return 1
  fi
  echo "built ${*:-everything} in $dir in $((SECONDS - t0))s"
}

# Every test of the label must have its binary: the sanitizer stages build only
# test_binaries[_<label>] (top-level CMakeLists.txt), and a test declared
# without ringcache_test() is not in them.
check_built() { # dir, label regex
  local missing
  missing=$(ctest --test-dir "$1" -L "$2" -N 2>&1 | grep -m 5 'Could not find executable') || true
  if [[ -n $missing ]]; then
    echo "$missing" >&2
    echo "a test's binary is not built by the stage's target (add it to the" \
         "test_binaries targets in CMakeLists.txt)" >&2
    return 1
  fi
}

# A fresh build folder has no test times, so ctest would start the tests in
# the order they are declared and could end on one long test running alone:
# tests/test_costs.txt (in ctest's cost-file form: name, runs, the seconds it
# took under ASan, or under TSan where that is longer) has it start the long
# ones first. ctest keeps the file up to date from then on.
run_ctest() { # dir, label regex
  local costs=$1/Testing/Temporary/CTestCostData.txt
  if [[ ! -f $costs ]]; then
    mkdir -p "${costs%/*}"
    cp "$root/tests/test_costs.txt" "$costs"
  fi
  ctest --test-dir "$1" -L "$2" -j "$jobs" --output-on-failure --timeout 600
}

# One libFuzzer target, for fuzz_seconds, on a copy of its seed corpus; its
# output goes to build/fuzz/<target>.log. Exits with the target's status.
fuzz_one() { # target (run in a subshell: its EXIT trap removes the copy)
  local t=$1 bin d
  fuzz_work=$(mktemp -d)
  trap 'rm -rf "$fuzz_work"' EXIT
  local work=$fuzz_work
  local seeds=$root/tests/fuzz/corpus/$t
  [[ -d $seeds ]] && cp -r "$seeds/." "$work/" 2>/dev/null || true
  local dict=()
  d=$(find "$root/tests/fuzz" -name "$t.dict" | head -1)
  [[ -n $d ]] && dict=(-dict="$d")
  bin=$(find "$root/build/fuzz" -name "$t" -type f -perm -u+x | head -1)
  if [[ -z $bin ]]; then
    echo "fuzz target $t was not built under build/fuzz"
    return 1
  fi
  cd "$work" && "$bin" "${dict[@]}" -max_total_time="$fuzz_seconds" -print_final_stats=1 \
    -artifact_prefix="$root/build/fuzz/crash-$t-" "$work"
}

# Prints one finished target's lines as a block; returns 1 when it failed.
fuzz_report() { # target, exit status
  local t=$1 rc=$2 log=$root/build/fuzz/$1.log
  echo "--- fuzz $t (${fuzz_seconds}s)"
  if ((rc != 0)); then
    tail -n 60 "$log"
    echo "fuzz target $t failed (exit $rc): crash input under build/fuzz/crash-$t-*," \
         "log build/fuzz/$t.log" >&2
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$log" | tr '\n' ' '
  echo
}

# Runs the targets $jobs at a time, each for fuzz_seconds. After a failure no
# new target starts; the running ones finish and are reported, then it fails.
fuzz_run() { # target...
  local -A running=()
  local n=0 failed=0 pid rc t
  for t in "$@" ""; do
    while ((${#running[@]} > 0)) && { [[ -z $t ]] || ((${#running[@]} >= jobs)) || ((failed)); }; do
      rc=0
      wait -n -p pid "${!running[@]}" || rc=$?
      fuzz_report "${running[$pid]}" "$rc" || failed=1
      unset "running[$pid]"
    done
    [[ -n $t ]] && ((!failed)) || continue
    (fuzz_one "$t") > "$root/build/fuzz/$t.log" 2>&1 &
    running[$!]=$t
    n=$((n + 1))
  done
  ((failed)) && exit 1
  echo "$n fuzz targets ran"
}

mkdir -p build
for s in "${stages[@]}"; do
  case $s in
    release)
      begin release "Release build, unit + integration tests"
      configure build/release -DCMAKE_BUILD_TYPE=Release
      build build/release
      run_ctest build/release 'unit|integration'
      end release ;;
    asan)
      begin asan "ASan+UBSan build, unit + integration tests"
      configure build/asan -DCMAKE_BUILD_TYPE=Debug -DRINGCACHE_SANITIZE=address
      build build/asan test_binaries
      check_built build/asan 'unit|integration'
      run_ctest build/asan 'unit|integration'
      end asan ;;
    tsan)
      begin tsan "TSan build, threads label"
      configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGCACHE_SANITIZE=thread
      if ctest --test-dir build/tsan -L threads -N | grep -q 'Total Tests: 0'; then
        echo "no test has the threads label yet"
      else
        build build/tsan test_binaries_threads
        check_built build/tsan threads
        run_ctest build/tsan threads
      fi
      end tsan ;;
    fuzz)
      begin fuzz "libFuzzer targets, ${fuzz_seconds}s each, $jobs at a time"
      configure build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGCACHE_FUZZ=ON \
        -DCMAKE_C_COMPILER=clang
      build build/fuzz fuzz_targets
      mapfile -t targets < <(grep -v '^$' build/fuzz/fuzz_targets.txt)
      fuzz_run "${targets[@]}"
      end fuzz ;;
    *) echo "test.sh: unknown stage '$s' (release, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done

echo
echo "=== all stages passed"
for l in "${summary[@]}"; do echo "    $l"; done
