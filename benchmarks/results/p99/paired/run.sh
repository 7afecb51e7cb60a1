#!/bin/bash
# Paired, alternating: main's library vs this branch's, each with its own interpreter, the same probe.
cd /work/wt-p99
export PATH=/root/.pyenv/versions/3.11.7/bin:$PATH; source /tmp/agent_env.sh
R=benchmarks/results/p99/paired
for pair in 1 2; do
  if [ $pair = 1 ]; then order="main p99"; else order="p99 main"; fi
  for who in $order; do
    if [ $who = main ]; then py=/work/main/.venv/bin/python; else py=/work/wt-p99/.venv/bin/python; fi
    echo "$(date -u +%H:%M:%S) pair $pair $who load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/load.txt
    $py benchmarks/tail_probe.py --rows ours --steps 20 --reps 1 --out $R/$who-$pair > /dev/null 2>> $R/stderr.txt
  done
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/load.txt
