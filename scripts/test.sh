#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test.sh: the README's test command. Installs what is missing (scripts/setup.sh),
# then runs the whole suite in stages, printing the time of each:
#   release  Release build, warnings as errors, unit + integration tests
#   asan     ASan+UBSan build, unit + integration tests
#   tsan     TSan build, the `threads` label
#   fuzz     clang libFuzzer build, each target for RINGCACHE_FUZZ_SECONDS (15)
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

configure_build() { # dir, cmake args...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DRINGCACHE_WERROR=ON "$@" > "$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; return 1; }
  if ! cmake --build "$dir" -j "$jobs" > "$dir.build.log" 2>&1; then
    grep -E 'error|warning|undefined' "$dir.build.log" | head -40
    echo "build failed in $dir (full log: $dir.build.log)" >&2
    return 1
  fi
}

run_ctest() { # dir, label regex
  ctest --test-dir "$1" -L "$2" -j "$jobs" --output-on-failure --timeout 600
}

mkdir -p build
for s in "${stages[@]}"; do
  case $s in
    release)
      begin release "Release build, unit + integration tests"
      configure_build build/release -DCMAKE_BUILD_TYPE=Release
      run_ctest build/release 'unit|integration'
      end release ;;
    asan)
      begin asan "ASan+UBSan build, unit + integration tests"
      configure_build build/asan -DCMAKE_BUILD_TYPE=Debug -DRINGCACHE_SANITIZE=address
      run_ctest build/asan 'unit|integration'
      end asan ;;
    tsan)
      begin tsan "TSan build, threads label"
      configure_build build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGCACHE_SANITIZE=thread
      if ctest --test-dir build/tsan -L threads -N | grep -q 'Total Tests: 0'; then
        echo "no test has the threads label yet"
      else
        run_ctest build/tsan threads
      fi
      end tsan ;;
    fuzz)
      begin fuzz "libFuzzer targets, ${fuzz_seconds}s each"
      configure_build build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGCACHE_FUZZ=ON \
        -DCMAKE_C_COMPILER=clang
      n=0
      while read -r t; do
        [[ -n $t ]] || continue
        n=$((n + 1))
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        seeds=$root/tests/fuzz/corpus/$t
        [[ -d $seeds ]] && cp -r "$seeds/." "$work/" 2>/dev/null || true
        dict=()
        d=$(find "$root/tests/fuzz" -name "$t.dict" | head -1)
        [[ -n $d ]] && dict=(-dict="$d")
        bin=$(find "$root/build/fuzz" -name "$t" -type f -perm -u+x | head -1)
        echo "--- fuzz $t (${fuzz_seconds}s)"
        if ! (cd "$work" && "$bin" "${dict[@]}" -max_total_time="$fuzz_seconds" \
                -print_final_stats=1 -artifact_prefix="$root/build/fuzz/crash-$t-" "$work" \
                > "$root/build/fuzz/$t.log" 2>&1); then
          tail -n 60 "$root/build/fuzz/$t.log"
          echo "fuzz target $t failed: crash input under build/fuzz/crash-$t-*" >&2
          exit 1
        fi
        grep -E '^stat::number_of_executed_units|^Done' "$root/build/fuzz/$t.log" | tr '\n' ' '
        echo
        rm -rf "$work"
        trap - EXIT
      done < build/fuzz/fuzz_targets.txt
      echo "$n fuzz targets ran"
      end fuzz ;;
    *) echo "test.sh: unknown stage '$s' (release, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done

echo
echo "=== all stages passed"
for l in "${summary[@]}"; do echo "    $l"; done
