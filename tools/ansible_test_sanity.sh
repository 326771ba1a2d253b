#!/usr/bin/env bash
# `ansible-test sanity` on the built collection (`make sanity`, docs/development.md): ansible-test needs
# an ansible_collections/<namespace>/<name> path and reads tests/sanity/ignore-2.19.txt from it.
# The first run on a machine fills ansible-test's per-test venvs from PyPI (pip bootstrapped by
# tools/ansible_test_get_pip.py, since ansible-test's own download host is unreachable here); later
# runs reuse those venvs and need no network. Extra arguments go to ansible-test (e.g. --test pylint).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${SANITY_WORKDIR:-$(mktemp -d /tmp/mgp-sanity.XXXXXX)}
trap 'rm -rf "$work"' EXIT
export PATH="$repo/.venv/bin:$PATH"

cache=~/.ansible/test/cache
mkdir -p "$cache"
cp "$repo/tools/ansible_test_get_pip.py" "$cache/get_pip_24_2.py"  # the pip version ansible-test 2.19 pins

ansible-galaxy collection build --force --output-path "$work/build" "$repo" >/dev/null
ansible-galaxy collection install --force --no-deps -p "$work" "$work"/build/multigres-pools-*.tar.gz >/dev/null
cd "$work/ansible_collections/multigres/pools"
# ansible-test lists the collection's files through git when it sits in a repository.
git init -q && git add -A
ansible-test sanity --python 3.11 --local --requirements --color no "$@"
