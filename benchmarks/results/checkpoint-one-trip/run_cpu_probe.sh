#!/bin/bash
# Alternating main / branch runs of save_cpu_probe.py (servers from `save_cpu_probe.py serve URLS`), each checkout's interpreter.
URLS=${URLS:-/tmp/ckptone_urls.json}
OUT=${OUT:-cpu-probe.jsonl}
HERE=$(cd "$(dirname "$0")" && pwd)
for n in 1 2 3 4 5 6; do
  for side in ${SIDES:-main branch}; do
    if [ $side = main ]; then PY=/work/main/.venv/bin/python; else PY=/work/wt-ckptone/.venv/bin/python; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    $PY "$HERE/save_cpu_probe.py" probe "$URLS" | sed "s/^{/{\"side\": \"$side\", \"run\": $n, \"load\": $load, /" >> "$HERE/$OUT"
  done
done
