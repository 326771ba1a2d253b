#!/usr/bin/env bash
# One-shot, idempotent set-up for a fresh machine: Debian packages, the .venv with pinned
# Python packages, the collection links, the Go-built test binaries and the Multigres toolchain
# (both cached per machine).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# One set-up at a time on a machine: the Go builds share one cache, and two runs building the same
# directory at once break each other (say `make typecheck` started while `make test` still sets up).
# flock -o holds the lock in its own process, so nothing this script starts can keep it.
if [ -z "${MGP_SETUP_LOCKED:-}" ]; then
  mkdir -p ~/.cache/multigres-pools
  MGP_SETUP_LOCKED=1 exec flock -o ~/.cache/multigres-pools/setup.lock "$repo/tools/setup.sh" "$@"
fi
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null || py=python3

need_apt=()
command -v go >/dev/null || need_apt+=(golang-go)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v lua5.4 >/dev/null || need_apt+=(lua5.4)  # runs the ArgoCD health check in tests
command -v etcdctl >/dev/null || need_apt+=(etcd-client)  # docs/playground.md reads the topology with it
command -v jq >/dev/null || need_apt+=(jq)  # docs/cli.md pipes `status -o json` into it
[ -x /usr/lib/git-core/git-http-backend ] || need_apt+=(git)  # the Git server Flux pulls from in tests
command -v redis-server >/dev/null || need_apt+=(redis-server)  # ArgoCD's cache in tests/integration/gitops
command -v zsh >/dev/null || need_apt+=(zsh)  # tests load the zsh completion as docs/cli.md shows
# make images: the OCI builder, the slim Debian bases, and the runtime its tests run the images on.
command -v buildah >/dev/null || need_apt+=(buildah)
command -v mmdebstrap >/dev/null || need_apt+=(mmdebstrap)
command -v containerd >/dev/null || need_apt+=(containerd)
command -v runc >/dev/null || need_apt+=(runc)
# The real node (playground/realnode): pod networking and the rules kube-proxy and kube-router write.
[ -x /usr/lib/cni/bridge ] || need_apt+=(containernetworking-plugins)
command -v iptables >/dev/null || need_apt+=(iptables)
command -v ipset >/dev/null || need_apt+=(ipset)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt meta/requirements.txt pyproject.toml | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating .venv and installing pinned packages"
  "$py" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
fi

# Ansible sees this checkout as multigres.pools only through ansible.cfg's collections_path (so only
# with this checkout's ansible.cfg): nothing here goes on sys.path, where every Ansible run of the
# venv would find it and shadow an installed copy. Plain Python imports of
# `ansible_collections.multigres.pools` come from the editable install (pyproject.toml maps it).
# kubernetes.core comes from the `ansible` wheel on PyPI.
coll=.venv/collections/ansible_collections
mkdir -p "$coll/multigres"
ln -sfn "$repo" "$coll/multigres/pools"
if [ ! -f "$coll/kubernetes/core/MANIFEST.json" ]; then
  echo "setup: unpacking kubernetes.core from the ansible package"
  tmp=$(mktemp -d)
  .venv/bin/pip download -q --disable-pip-version-check --no-deps -d "$tmp" ansible==12.3.0
  .venv/bin/python - "$tmp" "$coll" <<'PY'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("ansible-*.whl"))
prefix = "ansible_collections/kubernetes/core/"
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        if name.startswith(prefix):
            zf.extract(name, pathlib.Path(sys.argv[2]).parent)
PY
  rm -rf "$tmp"
fi
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site/multigres_pools_collections.pth"  # what older set-ups wrote (the leak above)

# Real etcd, kube-apiserver and kube-controller-manager, built once per machine; then the real
# test node's kubelet, kube-proxy, kube-scheduler, kubectl and add-ons (CoreDNS, kube-router,
# local-path-provisioner), each Go directory cached on its own (docs/development.md).
if [ -z "${SKIP_TEST_BINARIES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.binaries --ensure
  .venv/bin/python -m multigres_pools.playground.node_binaries --ensure
fi

# The operator-sdk Ansible Operator binary (ansible-operator-plugins, from the Go module proxy) that
# tests/integration/ansible_operator runs; once per machine, about 5 CPU-minutes cold.
if [ -z "${SKIP_TEST_BINARIES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.ansible_operator --ensure
fi

# Flux's source-controller and kustomize-controller (playground/flux_bin, from the Go module proxy)
# that tests/integration/gitops runs against a real Git server; once per machine, 3-4 minutes cold.
if [ -z "${SKIP_TEST_BINARIES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.flux --ensure
fi

# ArgoCD v3.6.1 (playground/argocd_bin: one binary for the application controller, the repo server
# and the cmp-server) for the same tests; built with the Go 1.27.3 toolchain from the Go module proxy
# (GOTOOLCHAIN is set for that build only); once per machine, about 12 minutes cold on 2 busy cores.
if [ -z "${SKIP_TEST_BINARIES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.argocd --ensure
fi

# versitygw (playground/s3server_bin), the S3 endpoint of the S3 repository tests; once per machine,
# about 1-3 minutes cold.
if [ -z "${SKIP_TEST_BINARIES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.s3server --ensure
fi

# Multigres v0.1.0, PostgreSQL 17, pgBackRest, an unprivileged user and a UTF-8 locale for the
# playground (docs/dependencies.md); once per machine. SKIP_MULTIGRES=1 skips only this step.
if [ -z "${SKIP_TEST_BINARIES:-}" ] && [ -z "${SKIP_MULTIGRES:-}" ]; then
  .venv/bin/python -m multigres_pools.playground.toolchain --ensure
fi
