#!/bin/bash
# Paired runs of any of three workloads: two servers pinned to core 0 AT THE SAME TIME, each loaded by its own
# autocannon from core 1 over one wall-clock window; fresh processes every round, sides swapping ports. B's answers
# per second as % of A's, per round and the median (the method of bench/paired.ts, which pairs non-streamed calls only).
#   bash bench/burst/pair.sh <plain|stream|idem> <rounds> [warm-up s] [measured s]
#   plain: non-streamed chat (bench/mock-upstream.ts); stream: 100-chunk bursts (burst-upstream.mjs);
#   idem: non-streamed with a fresh Idempotency-Key per call (bench/configs/idempotency-only.yaml, SQLite)
#   A_DIST / B_DIST: a build's dist directory (default: an old build in /tmp/hot-base/dist, and this checkout's),
#   or `passthrough` for bench/passthrough.ts, e.g. A_DIST=passthrough bash bench/burst/pair.sh stream 4
cd "$(dirname "$0")/../.."
MODE=$1; ROUNDS=$2; WARM=${3:-8}; SECS=${4:-6}
A=${A_DIST:-/tmp/hot-base/dist}; B=${B_DIST:-$PWD/dist}
NODE=node_modules/.bin/node
TMP=$(mktemp -d)
if [ $MODE = stream ]; then CHUNKS=100 PORT=9921 taskset -c 1 $NODE bench/burst/burst-upstream.mjs & U=$!
else PORT=9921 taskset -c 1 $NODE --import tsx bench/mock-upstream.ts > /dev/null & U=$!; fi
sleep 1.5
CFG=""; [ $MODE = idem ] && CFG=bench/configs/idempotency-only.yaml
start() { if [ "$1" = passthrough ]; then UPSTREAM_URL=http://127.0.0.1:9921 ADMIN_TOKEN=bench-admin-token UPSTREAM_API_KEY=sk-bench-upstream PORT=$2 taskset -c 0 $NODE --import tsx bench/passthrough.ts > $TMP/gw-$2.log 2>&1 & echo $!; return; fi; GATEWAY_CONFIG=$CFG GATEWAY_ENV=prod ADMIN_TOKEN=bench-admin-token UPSTREAM_BASE_URL=http://127.0.0.1:9921/v1 UPSTREAM_API_KEY=sk-bench-upstream PORT=$2 HOST=127.0.0.1 DATA_DIR=$TMP/data-$2-$RANDOM LOG_LEVEL=info taskset -c 0 $NODE $1/main.js > $TMP/gw-$2.log 2>&1 & echo $!; }
ratios=()
for r in $(seq $ROUNDS); do
  if [ $((r % 2)) = 1 ]; then PA=9931; PB=9932; else PA=9932; PB=9931; fi
  GA=$(start $A $PA); GB=$(start $B $PB)
  for p in $PA $PB; do for i in $(seq 50); do curl -s -o /dev/null -H 'authorization: Bearer bench-admin-token' http://127.0.0.1:$p/v1/models && break; sleep 0.2; done; done
  T=$(( $(date +%s%3N) + 300 ))
  taskset -c 1 $NODE bench/burst/pair-load.mjs "http://127.0.0.1:$PA/v1/chat/completions" $WARM $SECS $MODE 32 $T > $TMP/a.json & LA=$!
  taskset -c 1 $NODE bench/burst/pair-load.mjs "http://127.0.0.1:$PB/v1/chat/completions" $WARM $SECS $MODE 32 $T > $TMP/b.json & LB=$!
  wait $LA $LB
  kill $GA $GB; while kill -0 $GA 2>/dev/null || kill -0 $GB 2>/dev/null; do sleep 0.1; done
  ra=$(cat $TMP/a.json); rb=$(cat $TMP/b.json)
  ratio=$($NODE -e "const a=$ra,b=$rb;console.log((100*b.rps/a.rps).toFixed(1), 'A', a.rps.toFixed(0), a.bad, 'B', b.rps.toFixed(0), b.bad)")
  echo "round $r: B/A $ratio"; ratios+=("${ratio%% *}")
done
kill $U; rm -rf $TMP
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print "median B/A " m " %  (" a[1] "–" a[NR] ")"}'
