#!/bin/bash
# Streamed throughput, gateway vs passthrough, in one run: every stream is a burst of CHUNKS (100) chunks that the
# upstream writes at once (bench/burst/burst-upstream.mjs), so the run measures what each chunk costs.
#   npm run build && bash bench/burst/run.sh          (env: CHUNKS=100 C=64 D=10 ROUNDS=2)
# Servers on core 0 (one at a time, rounds alternate), upstream and autocannon on core 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE=node_modules/.bin/node
CHUNKS=${CHUNKS:-100}; C=${C:-64}; D=${D:-10}; ROUNDS=${ROUNDS:-2}
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
CHUNKS=$CHUNKS PORT=9901 taskset -c 1 $NODE bench/burst/burst-upstream.mjs & sleep 1
load() { taskset -c 1 $NODE node_modules/autocannon/autocannon.js -j -c "$C" -d "$1" -m POST -H 'authorization: Bearer bench-admin-token' -H 'content-type: application/json' -b '{"model":"bench-model","stream":true,"messages":[{"role":"user","content":"hi"}]}' "http://127.0.0.1:$2/v1/chat/completions" 2>/dev/null; }
rate() { load "$D" "$1" | $NODE -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);console.log(Math.round(r.requests.average), r.non2xx)})'; }
for round in $(seq 1 "$ROUNDS"); do
  UPSTREAM_URL=http://127.0.0.1:9901 ADMIN_TOKEN=bench-admin-token UPSTREAM_API_KEY=sk PORT=9903 taskset -c 0 $NODE --import tsx bench/passthrough.ts > /dev/null & P=$!; sleep 1.5
  load 3 9903 > /dev/null; echo "round $round passthrough streams/s, non-2xx: $(rate 9903)"; kill $P; wait $P 2>/dev/null || true
  GATEWAY_ENV=prod ADMIN_TOKEN=bench-admin-token UPSTREAM_BASE_URL=http://127.0.0.1:9901/v1 UPSTREAM_API_KEY=sk-bench PORT=9902 DATA_DIR="$TMP/data-$round" LOG_LEVEL=info taskset -c 0 $NODE dist/main.js > "$TMP/gw.log" 2>&1 & G=$!; sleep 1.5
  load 3 9902 > /dev/null; echo "round $round gateway     streams/s, non-2xx: $(rate 9902)"; kill $G; wait $G 2>/dev/null || true
done
