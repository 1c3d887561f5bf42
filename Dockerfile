# One image for both charts: /hub, /spoke and /rayfleet, static binaries on distroless, non-root.
# Build it with `make docker-build` (IMG=..., VERSION=...), or without Docker with `make image`
# (e2e/tools/image writes the same layout on its own base). There is no ENTRYPOINT: the charts
# set the command (/hub or /spoke), and `docker run IMG /rayfleet status ...` runs the CLI; a
# bare `docker run IMG` prints the version.

FROM golang:1.26 AS build
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
# The module download is its own layer, so that a source change does not fetch the modules again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/hub ./cmd/spoke ./cmd/rayfleet

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/hub /out/spoke /out/rayfleet /
USER 65532:65532
CMD ["/rayfleet", "version"]
