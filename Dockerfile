# syntax=docker/dockerfile:1
# The server's container image, the one the Helm chart runs
# (deploy/helm/validator-manager: image.repository, tag = appVersion):
#
#   docker build --build-arg VERSION=2.0.0 -t ghcr.io/validator-manager/validator-manager:2.0.0 .
#
# SQLite's driver (mattn/go-sqlite3) is cgo, so the binary links glibc. It is
# linked dynamically onto distroless/base, which carries glibc, CA
# certificates and the nonroot user (65532, the chart's runAsUser): a static
# glibc binary would still load NSS modules at run time for name lookups, and
# static-pie with cgo is fragile, so the dynamic link on a glibc base is the
# supported way. The builder is Debian 12 like the base, so both glibc
# versions agree. The image holds only the binary: cluster.mode in-cluster
# (or kubeconfig), PostgreSQL from database.dsn; the embedded default, which
# needs etcd and kube-apiserver binaries, is not for containers.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# deploy/helm/image_test.go runs this go build (the RUN line holding it)
# outside Docker with the same environment and flags.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -ldflags "-s -w -X main.version=${VERSION}" -o /out/validator-manager ./cmd/validator-manager

FROM gcr.io/distroless/base-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/validator-manager/validator-manager" \
      org.opencontainers.image.description="validator-manager: provisions and operates Canton Network validators on Kubernetes"
COPY --from=build /out/validator-manager /usr/local/bin/validator-manager
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/validator-manager"]
CMD ["serve"]
