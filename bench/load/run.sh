#!/usr/bin/env bash
# rein's load bench next to LangGraph's same workload, in one run (so the ratios hold on a noisy
# machine): LangGraph with its async SQLite saver (and its async Postgres saver when
# REIN_BENCH_DATABASE_URL is set) from PyPI into the ignored bench/load/.venv, then
# `cargo bench -p rein-operation --bench load`, then the ratios. Arguments: the concurrencies
# (default 100 1000) and, optionally, the backends (normal, full, postgres; default all). Needs
# python3 with venv and PyPI; nothing here runs in CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "langgraph==${LANGGRAPH_VERSION:-1.2.24}" \
    "langgraph-checkpoint-sqlite==${LANGGRAPH_SQLITE_VERSION:-3.1.2}" \
    "langgraph-checkpoint-postgres==${LANGGRAPH_POSTGRES_VERSION:-3.1.2}" "psycopg[binary]" psycopg-pool
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" "$here/langgraph_load.py" "$@" | tee "$out/langgraph.txt"
(cd "$root" && cargo bench -q -p rein-operation --bench load -- "$@" 2>/dev/null) | tee "$out/rein.txt"
echo
echo "== ratios (rein / LangGraph committed steps per second; LangGraph / rein added latency p99)"
grep -E "^load " "$out/rein.txt" | while read -r line; do
  setting=$(sed -E 's/^load ([^:]+):.*/\1/' <<<"$line")
  lg=$(grep -F "langgraph load $setting:" "$out/langgraph.txt" || true)
  [ -n "$lg" ] || continue
  rs=$(sed -E 's/.* ([0-9]+) committed steps\/s.*/\1/' <<<"$line")
  ls=$(sed -E 's/.* ([0-9]+) committed steps\/s.*/\1/' <<<"$lg")
  rp=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$line")
  lp=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$lg")
  awk -v s="$setting" -v rs="$rs" -v ls="$ls" -v rp="$rp" -v lp="$lp" \
    'BEGIN { printf "%s: rein %d steps/s, LangGraph %d steps/s (%.1f×); added latency p99 rein %.2f ms, LangGraph %.2f ms\n", s, rs, ls, rs / ls, rp, lp }'
done
