# Multi-stage build of a static batchgate binary on an empty base image.
# Build: docker build -t batchgate:latest .
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/* \
    && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin batchgate \
    && cp target/x86_64-unknown-linux-musl/release/batchgate /batchgate

FROM scratch
COPY --from=build /batchgate /batchgate
# Non-root; the Deployment also sets runAsNonRoot and a read-only root filesystem.
USER 65532:65532
EXPOSE 9443 8081
ENTRYPOINT ["/batchgate"]
CMD ["serve", "--config", "/etc/batchgate/config.yaml"]
