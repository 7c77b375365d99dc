#!/usr/bin/env bash
# rein's durable loop next to LangGraph's, measured in one run (so the ratios hold on a noisy
# machine): LangGraph + SqliteSaver (durability "sync") from PyPI into the ignored
# bench/durable/.venv, then `cargo bench -p rein-operation --bench durable` (SQLite NORMAL and
# FULL, the sqlx one-row floor, PostgreSQL when REIN_BENCH_DATABASE_URL is set, 10,000 parked
# operations), then the ratios. Needs python3 with venv and PyPI; nothing here runs in CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
venv="$here/.venv"
langgraph="${LANGGRAPH_VERSION:-1.2.24}"
saver="${LANGGRAPH_SQLITE_VERSION:-3.1.2}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "langgraph==$langgraph" "langgraph-checkpoint-sqlite==$saver"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" "$here/langgraph_loop.py" "${OPERATIONS:-200}" | tee "$out/langgraph.txt"
(cd "$root" && cargo bench -q -p rein-operation --bench durable 2>/dev/null) | tee "$out/rein.txt"
echo
echo "== ratios (LangGraph per tool round / rein per tool round, same setting)"
# rein's lines without a prefix are its default (pipelined commits); `sync commits, ` lines are
# rein with every commit written before the next step, LangGraph's durability "sync".
for setting in "synchronous=Normal" "synchronous=Full" "50 rounds, synchronous=Normal" "50 rounds, synchronous=Full" \
  "sync commits, synchronous=Normal" "sync commits, synchronous=Full" "sync commits, 50 rounds, synchronous=Normal" "sync commits, 50 rounds, synchronous=Full"; do
  lg=$(grep -F "langgraph ${setting#sync commits, }:" "$out/langgraph.txt" | sed -E 's/.* ([0-9.]+) µs per tool round.*/\1/')
  rn=$(grep -E "^$setting:" "$out/rein.txt" | sed -E 's/.* ([0-9.]+) µs per tool round.*/\1/')
  if [ -n "$lg" ] && [ -n "$rn" ]; then
    awk -v s="$setting" -v lg="$lg" -v rn="$rn" 'BEGIN { printf "%s: rein %.1f µs, LangGraph %.1f µs per tool round: rein %.1f× faster\n", s, rn, lg, lg / rn }'
  fi
done
