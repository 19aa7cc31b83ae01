#!/usr/bin/env bash
# The memory a build's compilers hold at once: every second, the summed RSS
# of every cicc, ptxas, cudafe++, cc1plus, fatbinary and nvlink process on
# the machine, how many there are, and MemAvailable. Run it beside one build
# on an otherwise idle machine, e.g.
#
#   bash bench/compiler_rss.sh > rss.log & nix build --max-jobs 1 --cores 2 .#kernels.NAME; kill %1
#   sort -k2 -n rss.log | tail -n 1     # the peak: epoch, KiB, processes, MemAvailable KiB
#
# A build's own log line (`cuwheel: peak RSS of this compile`) is its largest
# single process; this adds up the processes nvcc runs at once. Not a test.
while sleep 1; do
  avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  ps -eo rss=,comm= | awk -v now="$(date +%s)" -v avail="$avail" '
    $2 ~ /^(cicc|ptxas|cudafe\+\+|cc1plus|fatbinary|nvlink)$/ { s += $1; n++ }
    END { print now, s + 0, n + 0, avail }'
done
