#!/usr/bin/env bash
# `cuwheel fetch` of a project; when it exits 3 — pinned Debian packages that
# neither their suite, another suite of the mirror nor Debian's snapshot
# archive serves any more (docs/reference/fetch.md) — re-pin just those with
# `cuwheel lock --refresh`, saying so plainly, and fetch again. Any other
# failure stops here with fetch's status.
#
# Usage: fetch-or-repin.sh LABEL CUWHEEL PROJECT PYTHON [FETCH OPTION...]
#   LABEL prefixes what this script says (demo, prepare); CUWHEEL is the
#   binary; PYTHON the interpreter whose pip fetches and locks wheels; the
#   options go to `cuwheel fetch` only (e.g. --cell cu130-py313-torch211).
set -euo pipefail
label=$1 cuwheel=$2 project=$3 python=$4
shift 4

status=0
vanished=$("$cuwheel" fetch --project "$project" --python "$python" "$@") || status=$?
if [ "$status" = 3 ]; then
  count=$(printf '%s\n' "$vanished" | grep -c .)
  echo "$label: the Debian mirror (and Debian's snapshot archive) no longer carries $count pinned packages; re-pinning them with \`cuwheel lock --refresh\` (this changes $project/cuwheel.lock)"
  "$cuwheel" lock --refresh --project "$project" --python "$python"
  "$cuwheel" fetch --project "$project" --python "$python" "$@"
elif [ "$status" != 0 ]; then
  exit "$status"
fi
