#!/usr/bin/env bash
# Builds the helm CLI once, from its Go module (helm.sh/helm/v3/cmd/helm, the
# version pinned by the wrapper module tests/cluster/go/helm), for the chart
# tests (tests/e2e_helm.rs) and for `helm install` from a checkout.
#
# Output: ${BATCHGATE_HELM_CACHE:-$HOME/.cache/batchgate/helm}/<version>/helm
# The last line on stdout is the binary's path:
#   HELM=$(tests/cluster/build-helm.sh | tail -n1)
# With the cache warm this only checks the stamp and exits. Go's module and
# build caches (GOMODCACHE, GOCACHE) are shared with tests/cluster/build.sh,
# so the Kubernetes packages helm needs are mostly built already.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$here/go/helm"

log() { printf 'build-helm.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

ver="$(awk '$1 == "helm.sh/helm/v3" { print $2; exit }' "$mod/go.mod")"
[[ -n "$ver" ]] || die "no helm.sh/helm/v3 requirement in $mod/go.mod"

cache_root="${BATCHGATE_HELM_CACHE:-${HOME:?HOME is not set}/.cache/batchgate/helm}"
out="$cache_root/$ver"
bin="$out/helm"
stamp_want="$(cat "$mod"/go.{mod,sum} "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

complete() {
	[[ -x "$bin" && "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp_want" ]]
}
if complete; then
	printf '%s\n' "$bin"
	exit 0
fi

go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"
	elif [[ -x /usr/local/go/bin/go ]]; then go=/usr/local/go/bin/go
	fi
fi
[[ -n "$go" && -x "$go" ]] || die "Go is required to build helm and was not found (install Go >= 1.26, or set GO=/path/to/go); the first build needs the Go module proxy"
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is required"

mkdir -p "$out"
exec 9>"$out/.lock"
if ! flock -n 9; then
	log "another build-helm.sh holds $out/.lock; waiting for it"
	flock 9
fi
if complete; then
	printf '%s\n' "$bin"
	exit 0
fi

start=$SECONDS
log "building helm $ver"
tmp="$out/.helm.$$"
trap 'rm -f "$tmp"' EXIT
(cd "$mod" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly" "$go" build -trimpath \
	-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$ver" \
	-o "$tmp" helm.sh/helm/v3/cmd/helm)
mv -f "$tmp" "$bin"
printf '%s\n' "$stamp_want" >"$out/.stamp.tmp"
mv -f "$out/.stamp.tmp" "$out/.stamp"
"$bin" version --short >&2
log "built in $((SECONDS - start))s into $out"
printf '%s\n' "$bin"
