#!/bin/bash
# A third sitting of run-many-2.sh, from main after the merges (the library's load path unchanged by them):
# many_agents_bench.py at 1,000 agents, 20 steps, 192 MiB, ours and RedisSession, without a freeze, then with
# gc.freeze after each full collection.
cd /work/main
export PATH=/root/.pyenv/versions/3.11.7/bin:$PATH; source /tmp/agent_env.sh
R=benchmarks/results/p99
for mode in none each-full; do
  echo "$(date -u +%H:%M:%S) many $mode load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/many-load-3.txt
  if [ $mode = none ]; then flag=""; else flag="--gc-freeze $mode"; fi
  .venv/bin/python benchmarks/many_agents_bench.py --backends redis --agents 1000 --reps 2 --steps 20 --idle none \
    --stores RedisSession --cache-bytes 201326592 $flag --out $R/many-1000-$mode-3 > /dev/null 2>> $R/many-stderr-3.txt
done
echo "$(date -u +%H:%M:%S) done load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/many-load-3.txt
