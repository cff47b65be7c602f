#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# build.sh: builds helm/Dockerfile into a local image with podman, without a
# container registry. Both stages start from a Debian 12 base: --base names
# one you have (e.g. debian:12-slim pulled from your registry); otherwise a
# minimal bookworm root filesystem is made with debootstrap from this machine's
# Debian mirror (the one its apt sources name, or RINGCACHE_DEBIAN_MIRROR) and
# imported as --base-tag, once: a later run reuses it. The build's apt-get
# steps reach the mirror through the host's network.
#
#   bash helm/image/build.sh [--tag IMAGE] [--base IMAGE | --base-tag IMAGE]
#     --tag IMAGE       what to build (default localhost/ringcache:<appVersion>)
#     --base IMAGE      an existing Debian 12 image to build on
#     --base-tag IMAGE  the debootstrapped base (default
#                       localhost/ringcache-base:bookworm)
#
# Needs root (debootstrap, rootful podman) and the Debian packages podman,
# debootstrap, and runc where crun cannot start containers. Then push it:
#   podman push IMAGE registry.example.com/ringcache:0.1.0
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/engine.sh"

app=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/helm/ringcache/Chart.yaml")
tag=localhost/ringcache:$app
base=
base_tag=localhost/ringcache-base:bookworm
while (($#)); do
  case $1 in
    --tag) tag=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --base-tag) base_tag=$2; shift 2 ;;
    *) echo "build.sh: unknown argument $1 (--tag IMAGE, --base IMAGE, --base-tag IMAGE)" >&2; exit 2 ;;
  esac
done
die() { echo "build.sh: $*" >&2; exit 1; }
command -v podman >/dev/null || die "podman not found: install the Debian package podman (and runc)"

# The mirror apt uses here: deb822 sources first, then sources.list.
mirror() {
  local m=${RINGCACHE_DEBIAN_MIRROR:-}
  if [[ -z $m ]]; then
    m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  fi
  if [[ -z $m ]]; then
    m=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list 2>/dev/null || true)
  fi
  [[ -n $m ]] || die "no Debian mirror in /etc/apt/sources.list*: set RINGCACHE_DEBIAN_MIRROR"
  echo "$m"
}

if [[ -z $base ]]; then
  base=$base_tag
  if ! podman image exists "$base"; then
    command -v debootstrap >/dev/null || die "debootstrap not found: install the Debian package debootstrap, or give --base"
    [[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
    work=$(mktemp -d "${TMPDIR:-/tmp}/ringcache-base.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    m=$(mirror)
    echo "build.sh: making a bookworm base with debootstrap from $m (about a minute)"
    debootstrap --variant=minbase bookworm "$work/rootfs" "$m" >"$work/debootstrap.log" 2>&1 \
      || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    # what a slim base leaves out: package lists, caches, docs, man pages
    rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin \
      "$work/rootfs/usr/share/doc/"* "$work/rootfs/usr/share/man/"* "$work/rootfs/var/log/"*
    tar -C "$work/rootfs" --numeric-owner -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
    rm -rf "$work"
    trap - EXIT
    echo "build.sh: base image $base"
  fi
fi
engine_init "$base" || die "cannot run containers here"

# --layers=false: no cached intermediate images are left behind; --pull=never:
# the base is local; --network host: the RUN steps reach the Debian mirror.
"${ENGINE[@]}" build --layers=false --pull=never --network host "${ENGINE_LIMITS[@]}" \
  --build-arg "BASE=$base" --ignorefile "$root/helm/Dockerfile.dockerignore" \
  -f "$root/helm/Dockerfile" -t "$tag" "$root"
echo "build.sh: built $tag ($(podman image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }'), on $base)"
