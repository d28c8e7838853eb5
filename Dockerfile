# batchgate's image: the binary linked statically against glibc, on an empty
# base, as a non-root user, with no shell. The same image is assembled
# without a container engine by tests/cluster/build-image.sh (`make image`),
# and tests/image.rs checks that image against this file.
# Build: docker build -t batchgate:latest .
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# --target keeps build scripts and proc macros dynamic; only batchgate is static.
# No default features: the image has no `batchgate dev` (the local
# control-plane launcher).
RUN RUSTFLAGS='-C target-feature=+crt-static' \
    cargo build --release --locked --no-default-features --target x86_64-unknown-linux-gnu --bin batchgate \
    && cp target/x86_64-unknown-linux-gnu/release/batchgate /batchgate

FROM scratch
COPY --from=build --chmod=0555 /batchgate /batchgate
# Non-root; the Deployment also sets runAsNonRoot and a read-only root filesystem.
USER 65532:65532
EXPOSE 9443 8081 8082
ENTRYPOINT ["/batchgate"]
CMD ["serve", "--config", "/etc/batchgate/config.yaml"]
