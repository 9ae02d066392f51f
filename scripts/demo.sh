#!/usr/bin/env bash
# Install what is missing, then stream a throwaway PostgreSQL's changes to the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec uv run --locked cdc demo "$@"
