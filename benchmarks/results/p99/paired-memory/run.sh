#!/bin/bash
# CPU paired without a server: ours on memory:// (the whole provider and decode cache, no I/O), 1,000 agents,
# 20 steps, 192 MiB; main's library and this branch's alternating, each with its own interpreter.
cd /work/wt-p99
R=benchmarks/results/p99/paired-memory
for pair in 1 2 3; do
  if [ $pair = 2 ]; then order="p99 main"; else order="main p99"; fi
  for who in $order; do
    if [ $who = main ]; then py=/work/main/.venv/bin/python; else py=/work/wt-p99/.venv/bin/python; fi
    echo "$(date -u +%H:%M:%S) pair $pair $who load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/load.txt
    $py benchmarks/many_agents_bench.py --backends memory --agents 1000 --steps 20 --reps 1 --idle none \
      --stores none-but-ours --cache-bytes 201326592 --out $R/$who-$pair > /dev/null 2>> $R/stderr.txt
  done
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/load.txt
