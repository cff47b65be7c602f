# SPDX-License-Identifier: Apache-2.0
#
# engine.sh: sourced by build.sh and the image test. Finds podman and the
# options it needs on this host, in three arrays:
#   ENGINE        the podman command, with --runtime runc when the default
#                 runtime (crun) cannot start a container here, e.g. on a host
#                 with hybrid cgroups ("cgroups in hybrid mode not supported")
#   ENGINE_LIMITS --ulimit options no higher than this shell's own limits:
#                 rootful podman asks for nofile 1048576, which a host without
#                 CAP_SYS_RESOURCE refuses ("setrlimit RLIMIT_NOFILE: Operation
#                 not permitted"), and it lowers its own nproc to 32768
# engine_init returns 1 with a message when podman is missing or cannot run a
# container from the image it is given ($1).

engine_init() { # IMAGE: one to try `true` in
  local image=$1 nproc
  ENGINE=()
  if ! command -v podman >/dev/null; then
    echo "podman not found (Debian packages podman and runc)" >&2
    return 1
  fi
  nproc=$(ulimit -Hu)
  [[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
  ENGINE_LIMITS=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
  local try
  for try in "" runc; do
    if [[ -n $try ]]; then
      command -v "$try" >/dev/null || continue
      ENGINE=(podman --runtime "$try")
    else
      ENGINE=(podman)
    fi
    if "${ENGINE[@]}" run --rm --network host "${ENGINE_LIMITS[@]}" --entrypoint /bin/true "$image" >"${TMPDIR:-/tmp}/engine-try.$$" 2>&1; then
      rm -f "${TMPDIR:-/tmp}/engine-try.$$"
      return 0
    fi
  done
  echo "podman cannot start a container from $image here: $(tail -1 "${TMPDIR:-/tmp}/engine-try.$$") (with crun and with runc, if installed)" >&2
  rm -f "${TMPDIR:-/tmp}/engine-try.$$"
  return 1
}
