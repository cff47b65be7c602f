#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# check_layers.sh SOURCE_DIR: no import up the layers. Fails (exit 1), naming
# the file and the header, when
#  - anything under base/ includes a header of the tree outside base/: it is
#    the lowest layer, every module may use it and it uses none;
#  - anything under base/, ring/, pagecache/, client/ or cached/ includes a header of
#    the engine (ingest/): the engine sits on the client, never the reverse;
#  - a folder of ingest/ includes a header of a folder it may not use; the
#    table below is the engine's layering, lowest first (a folder may use
#    itself and the folders listed after it).
# Includes are matched by file name ("eng.h"), as the build's include paths
# resolve them.
set -euo pipefail
src=${1:?usage: check_layers.sh SOURCE_DIR}
cd "$src"

declare -A may=(
  [core]=""
  [io]="core"
  [format/parquet]="core io"
  [format/text]="core"
  [sql]=""
  [expr]="core"
  [plan]="core io format/parquet sql expr table"
  [source]="core io format/parquet format/text sql expr plan table"
  [table]="core io"
  [sink]="core table format/parquet"
  [exec]="core io format/parquet format/text sql expr plan source sink table"
  [dist]="core io format/parquet format/text sql expr plan source sink exec table"
  [server]="core io format/parquet format/text sql expr plan source sink exec table dist"
  [cli]="core io format/parquet format/text sql expr plan source sink exec table server dist"
)

# header name -> its folder under ingest/
declare -A home=()
while IFS= read -r h; do
  rel=${h#ingest/}
  dir=${rel%/*}
  [[ $dir == "$rel" ]] && dir=.
  home[${h##*/}]=$dir
done < <(find ingest -name '*.h' | sort)

bad=0
includes() { grep -oE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+"' "$1" | sed -E 's/.*"([^"]+)"/\1/'; }

# base/: only its own headers
declare -A in_base=()
while IFS= read -r h; do in_base[${h##*/}]=1; done < <(find base -name '*.h' | sort)
while IFS= read -r f; do
  for inc in $(includes "$f"); do
    if [[ -z ${in_base[${inc##*/}]:-} ]]; then
      echo "$f includes \"$inc\": base/ is the lowest layer and may use only its own headers"
      bad=1
    fi
  done
done < <(find base -name '*.[ch]' | sort)

for top in base ring pagecache client cached; do
  [[ -d $top ]] || continue
  while IFS= read -r f; do
    for inc in $(includes "$f"); do
      if [[ -n ${home[${inc##*/}]:-} ]]; then
        echo "$f includes \"$inc\" (ingest/${home[${inc##*/}]}): nothing under $top/ may use the engine; move the code to the engine's side (ingest/cli/ composes both)"
        bad=1
      fi
    done
  done < <(find "$top" -name '*.[ch]' | sort)
done

while IFS= read -r f; do
  rel=${f#ingest/}
  dir=${rel%/*}
  if [[ -z ${may[$dir]+set} ]]; then
    echo "$f: folder ingest/$dir has no place in the layer table of $0; add it"
    bad=1
    continue
  fi
  for inc in $(includes "$f"); do
    to=${home[${inc##*/}]:-}
    [[ -z $to || $to == "$dir" ]] && continue
    if [[ " ${may[$dir]} " != *" $to "* ]]; then
      echo "$f includes \"$inc\" from ingest/$to: ingest/$dir may use only: ${may[$dir]:-itself}"
      bad=1
    fi
  done
done < <(find ingest -mindepth 2 -name '*.[ch]' | sort)

if (( bad )); then
  exit 1
fi
echo "layers: no include runs up the layers"
