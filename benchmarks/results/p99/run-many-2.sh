#!/bin/bash
# many_agents_bench.py at 1,000 agents, 20 steps, 192 MiB, ours (main's library: this branch after the revert)
# and RedisSession: without a freeze, then with gc.freeze after each full collection, back to back (a second sitting).
cd /work/wt-p99
export PATH=/root/.pyenv/versions/3.11.7/bin:$PATH; source /tmp/agent_env.sh
R=benchmarks/results/p99
for mode in none each-full; do
  echo "$(date -u +%H:%M:%S) many $mode load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/many-load-2.txt
  if [ $mode = none ]; then flag=""; else flag="--gc-freeze $mode"; fi
  .venv/bin/python benchmarks/many_agents_bench.py --backends redis --agents 1000 --reps 2 --steps 20 --idle none \
    --stores RedisSession --cache-bytes 201326592 $flag --out $R/many-1000-$mode-2 > /dev/null 2>> $R/many-stderr-2.txt
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/many-load-2.txt
