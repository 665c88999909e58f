#!/usr/bin/env bash
# Usage: scripts/with-node.sh <node-major> <command...>
#   e.g. scripts/with-node.sh 24 npm test
#        RSC_IOREDIS=5 scripts/with-node.sh 22 npx vitest run --project unit
#
# Runs the command with that Node.js release first on PATH (one of .ci/node-versions: the
# machine's own Node 20, or 22 / 24 fetched once from the npm registry into a cache by
# .ci/fetch-node), so npm, npx, Vitest and every child process the tests start run on it.
# RSC_IOREDIS=5 makes the repository's code (library, apps, tests, bench) use ioredis 5 (the
# `ioredis5` devDependency) instead of 6, through a module resolve hook in NODE_OPTIONS that
# child processes inherit (scripts/ioredis5/register.mjs). The run exports RSC_NODE and
# RSC_IOREDIS; test/workspace/runtime-versions.e2e-spec.ts checks the run really uses them.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
major="${1:?usage: scripts/with-node.sh <node-major> <command...>}"
shift
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/with-node.sh <node-major> <command...>" >&2
  exit 2
fi

bin="$("$root/.ci/fetch-node" "$major")"
export PATH="$bin:$PATH"
export RSC_NODE="$major"

case "${RSC_IOREDIS:-6}" in
  6) export RSC_IOREDIS=6 ;;
  5)
    export RSC_IOREDIS=5
    export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--import=file://$root/scripts/ioredis5/register.mjs"
    ;;
  *)
    echo "with-node: RSC_IOREDIS must be 5 or 6, not '$RSC_IOREDIS'" >&2
    exit 2
    ;;
esac

exec "$@"
