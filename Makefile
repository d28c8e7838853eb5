# The two commands the README promises:
#   make dev   - build what is missing, start a local control plane, run batchgate against it
#                set up as Kueue's quick start, print a tour (tests/cluster/dev.sh)
#   make test  - every check and test CI runs
.PHONY: test lint dev manifests cluster bench image

test: lint
	tests/cluster/build.sh >/dev/null
	tests/cluster/build-helm.sh >/dev/null
	tests/cluster/build-cert-manager.sh >/dev/null
	tests/cluster/kueue/build.sh kueuectl >/dev/null
	# Kueue's whole manager (the stock MultiKueue worker of
	# tests/e2e_kueue_interop.rs) builds beside cargo; the test waits
	# for it on the script's lock and shows its errors if it failed.
	tests/cluster/kueue/build.sh manager >/dev/null 2>&1 &
	tests/cluster/build-image.sh --profile dev >/dev/null
	tests/run-all.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

cluster:
	tests/cluster/build.sh
	tests/cluster/build-helm.sh
	tests/cluster/build-cert-manager.sh

# `make dev ARGS=--no-demo` keeps the bare cluster (no queues, no tour).
dev:
	@tests/cluster/dev.sh $(ARGS)

manifests:
	cargo run -q -- webhooks > manifests/webhooks.yaml
	cargo run -q -- webhooks --inject-ca-from batchgate-system/batchgate-serving-cert > manifests/cert-manager/webhooks.yaml
	rm -f manifests/crds/*.yaml
	cargo run -q -- crds --out-dir manifests/crds
	rm -f manifests/cert-manager/crds/*.yaml
	cargo run -q -- crds --converted-only --inject-ca-from batchgate-system/batchgate-serving-cert --out-dir manifests/cert-manager/crds

# The container image as an OCI layout in target/image/oci (no container
# engine needed; README, Container image).
image:
	tests/cluster/build-image.sh

bench:
	cargo bench --bench handler
	cargo bench --bench load
