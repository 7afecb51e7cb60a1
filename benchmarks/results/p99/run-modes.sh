#!/bin/bash
# Ours (this branch) against openai-agents RedisSession, 1,000 agents, 20 steps, 192 MiB cache:
# the collector as Python sets it, then gc.freeze() before the steps, then also after each full collection.
cd /work/wt-p99
export PATH=/root/.pyenv/versions/3.11.7/bin:$PATH; source /tmp/agent_env.sh
R=benchmarks/results/p99
for mode in none start each-full; do
  echo "$(date -u +%H:%M:%S) $mode load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/modes-load.txt
  if [ $mode = none ]; then flag=""; else flag="--gc-freeze $mode"; fi
  .venv/bin/python benchmarks/tail_probe.py --steps 20 --reps 2 $flag --out $R/modes-$mode > /dev/null 2>> $R/modes-stderr.txt
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/modes-load.txt
