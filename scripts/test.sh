#!/usr/bin/env bash
# Install what is missing, then run every test (throwaway servers are started by the fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec uv run --locked pytest "$@"
