#!/bin/bash
# Alternating main / branch runs of checkpoints_bench.py, each checkout with its own interpreter.
set -u
export PATH=/root/.pyenv/versions/3.11.7/bin:$PATH
source /tmp/agent_env.sh
DIR=/work/wt-ckptone/benchmarks/results/checkpoint-one-trip/2026-12-05-paired
ONLY="SQLite,Redis,MongoDB,S3,fsspec local,PostgreSQL: ours,PostgreSQL: raw"
for n in ${RUNS:-1 2 3}; do
  for side in main branch; do
    if [ $side = main ]; then CHECKOUT=/work/main; else CHECKOUT=/work/wt-ckptone; fi
    echo "$(date -u +%H:%M:%S) start $side-$n load $(cut -d' ' -f1-3 /proc/loadavg)" >> $DIR/sequence.log
    OUT=/tmp/ckptone-bench/$side-$n
    mkdir -p $OUT
    (cd $CHECKOUT && .venv/bin/python benchmarks/checkpoints_bench.py --reps 2 --saves 300 --big 20 --only "$ONLY" --out $OUT > $OUT/stdout.txt 2> $OUT/stderr.txt)
    echo "$(date -u +%H:%M:%S) end $side-$n rc $? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $DIR/sequence.log
    cp $OUT/checkpoints.json $DIR/$side-$n.json
    cp $OUT/checkpoints.md $DIR/$side-$n.md
  done
done
echo finished >> $DIR/sequence.log
