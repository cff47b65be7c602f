# SPDX-License-Identifier: Apache-2.0
#
# renderer.sh: sourced by the chart and image checks. renderer_check tells
# why the offline renderer cannot be built here (a missing Go or Go package,
# with the Debian package to install) and returns 1; renderer_build SRC TMP
# builds helm/tools/render into TMP/render in GOPATH mode against Debian's Go
# sources, with its build cache under TMP (no network, nothing written
# elsewhere), and returns 1 with the compiler's output on failure.

renderer_gocode=/usr/share/gocode

renderer_check() {
  command -v go >/dev/null || { echo "go not found (Debian package golang-go)"; return 1; }
  local p
  for p in github.com/Masterminds/sprig:golang-github-masterminds-sprig-dev \
           github.com/Masterminds/semver:golang-github-masterminds-semver-dev \
           github.com/xeipuuv/gojsonschema:golang-github-xeipuuv-gojsonschema-dev \
           gopkg.in/yaml.v2:golang-gopkg-yaml.v2-dev \
           gopkg.in/yaml.v3:golang-gopkg-yaml.v3-dev; do
    [[ -d $renderer_gocode/src/${p%%:*} ]] || { echo "Go package ${p%%:*} not in $renderer_gocode (Debian package ${p##*:})"; return 1; }
  done
}

renderer_build() { # SRC TMP
  mkdir -p "$2/gocache"
  if ! (cd "$1/helm/tools/render" && GO111MODULE=off GOPATH=$renderer_gocode GOCACHE=$2/gocache \
        GOTMPDIR=$2 GOFLAGS= GOTOOLCHAIN=local go build -o "$2/render" .) >"$2/build.log" 2>&1; then
    cat "$2/build.log" >&2
    return 1
  fi
}
