#!/usr/bin/env bash
# Builds the local test control plane once, from Go modules only:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (go/k8s)
#   etcd                                                              (go/etcd)
#   kwok + its "fast" stage configs                                   (go/kwok)
#
# Output: ${BATCHGATE_CLUSTER_CACHE:-$HOME/.cache/batchgate/cluster}/<k8s>-<etcd>-<kwok>/
#           bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,etcd,kwok}
#           stages.yaml
# The last line on stdout is the bin directory, so callers can capture it:
#   BIN=$(tests/cluster/build.sh | tail -n1)
#
# With the cache warm this only checks that everything exists and exits.
# Go's module and build caches (GOMODCACHE, GOCACHE) are reused as configured.
# Concurrent runs are serialised with flock(1).
#
# Environment:
#   BATCHGATE_CLUSTER_CACHE  cache root (default $HOME/.cache/batchgate/cluster)
#   GO                       go binary to use (default: `go` on PATH, then /usr/local/go/bin/go)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gomods="$here/go"

log() { printf 'build.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Versions come from the committed wrapper go.mod files (single source of truth).
# The require line is the one without "=>" (the replace line has one).
modver() { # <go.mod> <module path>
	awk -v m="$2" '$0 !~ /=>/ && ($1 == m || ($1 == "require" && $2 == m)) {
		v = ($1 == "require") ? $3 : $2; print v; exit }' "$1"
}
k8s_ver="$(modver "$gomods/k8s/go.mod" k8s.io/kubernetes)"
etcd_ver="$(modver "$gomods/etcd/go.mod" go.etcd.io/etcd/server/v3)"
kwok_ver="$(modver "$gomods/kwok/go.mod" sigs.k8s.io/kwok)"
[[ -n "$k8s_ver" && -n "$etcd_ver" && -n "$kwok_ver" ]] ||
	die "could not read versions from $gomods/{k8s,etcd,kwok}/go.mod"

cache_root="${BATCHGATE_CLUSTER_CACHE:-${HOME:?HOME is not set}/.cache/batchgate/cluster}"
out="$cache_root/$k8s_ver-$etcd_ver-$kwok_ver"
bin="$out/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

# The stamp records the exact inputs; a change to any go.mod/go.sum rebuilds.
stamp_want="$(cat "$gomods"/{k8s,etcd,kwok}/go.{mod,sum} "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

complete() {
	local b
	for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
	[[ -s "$out/stages.yaml" ]] || return 1
	[[ "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp_want" ]]
}

if complete; then
	printf '%s\n' "$bin"
	exit 0
fi

# ---- locate Go -------------------------------------------------------------
go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"
	elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
	fi
fi
if [[ -z "$go" || ! -x "$go" ]]; then
	die "Go is required to build the local control plane and was not found.
  Install Go >= 1.26 (https://go.dev/dl/, unpack to /usr/local/go) and put
  /usr/local/go/bin on PATH, or point GO=/path/to/go at a Go binary.
  The build needs access to the Go module proxy (GOPROXY) on first run."
fi
gover="$("$go" env GOVERSION)"
case "$gover" in
go1.2[6-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
*) log "warning: $gover is older than go1.26 (kwok $kwok_ver needs go1.26); GOTOOLCHAIN may download a newer toolchain" ;;
esac

command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required"
mkdir -p "$out"
exec 9>"$out/.lock"
if ! flock -n 9; then
	log "another build.sh holds $out/.lock; waiting for it"
	flock 9
fi
if complete; then # someone else built it while we waited
	printf '%s\n' "$bin"
	exit 0
fi

start=$SECONDS
tmp="$out/.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp" "$bin"
trap 'rm -rf "$tmp"' EXIT

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"

# ---- Kubernetes (upstream flags: hack/lib/golang.sh, hack/lib/version.sh) ----
k8s_minor="${k8s_ver#v1.}"
k8s_minor="${k8s_minor%%.*}"
k8s_x=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
	k8s_x+=" -X $pkg.gitVersion=$k8s_ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
	k8s_x+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
log "building Kubernetes $k8s_ver (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
(cd "$gomods/k8s" && "$go" build -trimpath -tags selinux,notest,grpcnotrace \
	-ldflags "-s -w$k8s_x" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubectl)
log "  done after $((SECONDS - start))s"

# ---- etcd --------------------------------------------------------------------
log "building etcd $etcd_ver"
(cd "$gomods/etcd" && "$go" build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
log "  done after $((SECONDS - start))s"

# ---- kwok --------------------------------------------------------------------
log "building kwok $kwok_ver"
(cd "$gomods/kwok" && "$go" build -trimpath \
	-ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_ver#v}" \
	-o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
log "  done after $((SECONDS - start))s"

# Stage configs ship inside the kwok module; take them from the module cache.
kwok_dir="$(cd "$gomods/kwok" && "$go" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
[[ -d "$kwok_dir/kustomize/stage" ]] || die "kwok module has no kustomize/stage at $kwok_dir"
stages=(
	node/fast/node-initialize.yaml
	node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
	pod/fast/pod-ready.yaml
	pod/fast/pod-complete.yaml
	pod/fast/pod-delete.yaml
)
{
	printf '# kwok %s "fast" stages, concatenated by tests/cluster/build.sh from\n# %s/kustomize/stage\n' \
		"$kwok_ver" "sigs.k8s.io/kwok@$kwok_ver"
	for s in "${stages[@]}"; do
		[[ -f "$kwok_dir/kustomize/stage/$s" ]] || die "missing kwok stage $s in $kwok_dir"
		printf -- '---\n# %s\n' "$s"
		cat "$kwok_dir/kustomize/stage/$s"
	done
} >"$tmp/stages.yaml"

# Publish atomically: readers that do not take the lock never see half a file.
for b in "${binaries[@]}"; do mv -f "$tmp/$b" "$bin/$b"; done
mv -f "$tmp/stages.yaml" "$out/stages.yaml"
printf '%s\n' "$stamp_want" >"$out/.stamp.tmp"
mv -f "$out/.stamp.tmp" "$out/.stamp"
"$bin/kube-apiserver" --version >&2
log "built in $((SECONDS - start))s into $out"
printf '%s\n' "$bin"
