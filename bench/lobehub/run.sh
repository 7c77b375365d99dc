#!/usr/bin/env bash
# Compare rein's engine with LobeHub's TypeScript engine on the same in-memory loop.
# Needs node + npm and the npm registry; nothing here runs in CI. LobeHub's code is fetched
# from its published npm package into a temporary folder and never committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${LOBEHUB_BENCH_DIR:-/tmp/rein-lobehub-bench}"
version="${LOBEHUB_VERSION:-2.1.26}"
mkdir -p "$work"
cd "$work"
if [ ! -d package/packages/agent-runtime ]; then
  npm pack --silent "@lobehub/lobehub@${version}" >/dev/null
  tar xzf "lobehub-lobehub-${version}.tgz" package/packages/agent-runtime
fi
[ -f package.json ] || npm init -y >/dev/null
[ -d node_modules/esbuild ] || npm install --silent esbuild@0.25 p-map@7 tokenx@1
node_modules/.bin/esbuild package/packages/agent-runtime/src/index.ts --bundle --platform=node \
  --format=esm --target=node20 --external:p-map --external:tokenx --log-level=error \
  --outfile=lobehub-runtime.mjs
cp "$here/harness.mjs" .
node harness.mjs
echo
# rein's figures come first in the bench output; the criterion part after them is skipped.
(cd "$here/../.." && cargo bench -q -p rein-core --bench engine_loop -- --warm-up-time 1 --measurement-time 1) \
  > rein-bench.txt 2>/dev/null
grep -E "reference loop|per (operation|round|step)" rein-bench.txt
