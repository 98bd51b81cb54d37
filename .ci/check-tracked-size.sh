#!/usr/bin/env bash
# Fails when git tracks a file over 1 MB: build outputs and binaries belong
# in .gitignore, not in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk -v l=$limit '$1 > l {print}')
if [ -n "$big" ]; then
  echo "tracked files over 1 MB (build outputs? add them to .gitignore and git rm --cached):" >&2
  echo "$big" >&2
  exit 1
fi
