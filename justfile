# kino: `just run` starts the service with everything embedded, `just test` runs every test.

set shell := ["bash", "-euo", "pipefail", "-c"]

data := env_var_or_default("KINO_DATA", "./data")

# List the recipes.
default:
    @just --list

# Install ffmpeg when it is missing (apt-get as root, otherwise print the command).
ensure-ffmpeg:
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then exit 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ffmpeg with apt-get" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
    else
        echo "ffmpeg is missing; install it with:" >&2
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ffmpeg" >&2
        exit 1
    fi

# Build the kino binary into ./bin.
build:
    go build -o bin/kino ./cmd/kino

# Run kino serve --dev on {{data}}: embedded NATS, API on :8080, prints a dev API key on first start.
run: ensure-ffmpeg build
    ./bin/kino serve --dev --data {{data}}

# The whole test suite: formatting, vet, and every Go test (real NATS, bbolt and ffmpeg).
test: ensure-ffmpeg
    @test -z "$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
    go vet ./...
    go test -count=1 ./...

# Benchmarks of reads and uploads (results go in docs/performance.md).
bench: ensure-ffmpeg
    go test -run '^$' -bench . -benchmem -benchtime 2s ./cmd/kino
