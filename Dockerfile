# plload in a container: the static binary (no cgo, as `just build` makes it) on an empty image.
#   docker build -t plload --build-arg VERSION=$(git describe --tags --always) .
# Runs as uid/gid 65532 (non-root); results go to a mounted volume (plload k8s mounts /results).

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/plload/plload/cli.version=${VERSION}" -o /out/plload . \
    && mkdir -p /out/tmp && chmod 1777 /out/tmp

FROM scratch
# TLS roots for https targets and the Hugging Face hub; an empty image has none.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/plload /plload
# HOME holds the Hugging Face cache (docs/tokenizers.md); /tmp is the one writable place on a read-only root.
ENV HOME=/tmp TMPDIR=/tmp
USER 65532:65532
ENTRYPOINT ["/plload"]
