# kino: `just run` starts the service with everything embedded, `just test` runs every test.

set shell := ["bash", "-euo", "pipefail", "-c"]

data := env_var_or_default("KINO_DATA", "./data")

# Static binaries, built and tested without cgo: kino needs no libc at run
# time (any Linux, a scratch container), the embedded NATS server's
# optional cgo hook is left out, and go links every test binary itself
# instead of through gcc and ld (the suite's builds: 25 s instead of 39 s
# warm, 189 s instead of 207 s from an empty cache). Users and groups
# (--ffmpeg-user) resolve from /etc/passwd and /etc/group.
export CGO_ENABLED := env_var_or_default("CGO_ENABLED", "0")

# Builds without the checkout's path in them (-trimpath): the same source
# builds the same binary wherever it is checked out, and a new clone finds
# the packages an earlier clone compiled in Go's build cache instead of
# compiling them again (vet and every test binary of a new clone: 22 s
# instead of 72 s). Stack traces name files by module path.
export GOFLAGS := env_var_or_default("GOFLAGS", "-trimpath")

# List the recipes.
default:
    @just --list

# Install ffmpeg and the speech model of generated captions (pocketsphinx-en-us) when missing (apt-get as root, otherwise print the command).
ensure-ffmpeg:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || missing+=(ffmpeg)
    [ -f /usr/share/pocketsphinx/model/en-us/en-us.lm.bin ] || missing+=(pocketsphinx-en-us)
    if [ ${#missing[@]} = 0 ]; then exit 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ${missing[*]} with apt-get" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    elif [[ " ${missing[*]} " == *" ffmpeg "* ]]; then
        echo "ffmpeg is missing; install it with:" >&2
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}" >&2
        exit 1
    else
        echo "generated captions are off until the speech model is installed:" >&2
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y pocketsphinx-en-us" >&2
    fi

# Install Festival and its voice (the speech the captions tests recognize) when missing.
ensure-speech: ensure-ffmpeg
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v text2wave >/dev/null && [ -d /usr/share/festival/voices/english/kal_diphone ]; then exit 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing festival with apt-get" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq festival festvox-kallpc16k >/dev/null
    else
        echo "festival is missing; install it with:" >&2
        echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y festival festvox-kallpc16k" >&2
        exit 1
    fi

# Install Debian's chromium and the browser test's npm packages (playwright-core, hls.js) when missing.
ensure-browser:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x /usr/bin/chromium ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "installing chromium with apt-get" >&2
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        else
            echo "chromium is missing; install it with:" >&2
            echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium" >&2
            exit 1
        fi
    fi
    if [ ! -d cmd/kino/testdata/browser/node_modules/playwright-core ] || [ ! -d cmd/kino/testdata/browser/node_modules/hls.js ] || [ ! -d cmd/kino/testdata/browser/node_modules/tus-js-client ]; then
        npm ci --prefix cmd/kino/testdata/browser --no-audit --no-fund >/dev/null
    fi

# Build versitygw, the S3 server the S3 media tests run against, when missing (go install, about 2 minutes once).
ensure-s3:
    #!/usr/bin/env bash
    set -euo pipefail
    bin=$(go env GOBIN); bin=${bin:-$(go env GOPATH)/bin}
    if command -v versitygw >/dev/null || [ -x "$bin/versitygw" ]; then exit 0; fi
    echo "building versitygw v1.8.0 into $bin" >&2
    go install github.com/versity/versitygw/cmd/versitygw@v1.8.0

# Install hls.js and tus-js-client from npm (transport/httpapi/player/web and transport/dashboard/web, lock files pinned) and copy them where go:embed builds them into kino (/play and the dashboard).
assets:
    #!/usr/bin/env bash
    set -euo pipefail
    web=transport/httpapi/player/web
    if [ ! -f $web/node_modules/hls.js/dist/hls.min.js ] || [ $web/package-lock.json -nt $web/node_modules/.package-lock.json ]; then
        npm ci --prefix $web --no-audit --no-fund >/dev/null
    fi
    cp $web/node_modules/hls.js/dist/hls.min.js transport/httpapi/player/assets/hls.min.js
    web=transport/dashboard/web
    if [ ! -f $web/node_modules/tus-js-client/dist/tus.min.js ] || [ $web/package-lock.json -nt $web/node_modules/.package-lock.json ]; then
        npm ci --prefix $web --no-audit --no-fund >/dev/null
    fi
    cp $web/node_modules/tus-js-client/dist/tus.min.js transport/dashboard/assets/tus.min.js

# Build the kino binary into ./bin (player assets included), stamped with the commit (kino version).
build: assets
    #!/usr/bin/env bash
    set -euo pipefail
    commit=$(git describe --always --dirty=-dirty --abbrev=40 2>/dev/null || git -c safe.directory="$PWD" describe --always --dirty=-dirty --abbrev=40 2>/dev/null || true)
    when=$(git log -1 --format=%cI 2>/dev/null || git -c safe.directory="$PWD" log -1 --format=%cI 2>/dev/null || true)
    go build -ldflags "-X main.commit=$commit -X main.commitTime=$when" -o bin/kino ./cmd/kino

# Run kino serve --dev on {{data}}: embedded NATS, API on :8080, prints a dev API key on first start.
run: ensure-ffmpeg build
    ./bin/kino serve --dev --data {{data}}

# The whole test suite: formatting, vet, and every Go test (real NATS, bbolt and ffmpeg).
test: ensure-ffmpeg ensure-speech ensure-browser ensure-s3 assets
    @test -z "$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
    # GOGC=400: the compiler, vet and the tests' processes collect garbage a
    # quarter as often; CPU is what the suite lacks, not memory (vet from an
    # empty build cache: 293 s of CPU instead of 331 s, 1.5 GB at most).
    GOGC=400 go vet ./...
    # go vet ./... ran every analyzer already: go test's own subset would be a second pass.
    # The longest packages first (then those that mostly wait on speech,
    # NATS restarts and backoffs): go test starts them in the order given,
    # three at a time, so the short ones run beside them instead of after.
    # -ldflags=-w: test binaries without DWARF build with a fifth less CPU
    # (panics still print their stacks).
    GOGC=400 go test -p 3 -count=1 -vet=off -ldflags=-w -timeout 20m ./cmd/kino ./transport/transcoder ./transport/asr ./transport/webhook ./...

# kino bench: reads, writes, uploads, processing and replay, each beside a same-run baseline (about 15 minutes).
bench: ensure-ffmpeg build
    ./bin/kino bench

# Starts kino on a fresh data dir, uploads a generated 10 s sample with a progress bar and prints its playlist and player page.
# The data dir is removed on exit; KEEP=1 just demo keeps it.
demo port="8090": ensure-ffmpeg build
    #!/usr/bin/env bash
    set -euo pipefail
    data=$(mktemp -d -t kino-demo-XXXX)
    chmod 711 "$data" # as root, ffmpeg runs as nobody and must pass through it
    # The embedded NATS takes any free loopback port; the log says which.
    ./bin/kino serve --data "$data" --addr 127.0.0.1:{{port}} --nats-listen 127.0.0.1:0 2> "$data/serve.log" &
    pid=$!
    cleanup() {
        trap '' INT TERM # just passes Ctrl-C on as SIGTERM: finish cleaning up
        kill $pid 2>/dev/null || true
        wait $pid 2>/dev/null || true
        if [ -n "${KEEP:-}" ]; then echo "demo data kept in $data"; else rm -rf "$data"; fi
    }
    trap cleanup EXIT
    for i in $(seq 100); do
        curl -fsS http://127.0.0.1:{{port}}/healthz >/dev/null 2>&1 && break
        kill -0 $pid 2>/dev/null || { cat "$data/serve.log"; exit 1; }
        sleep 0.1
    done
    nats=$(sed -n 's/.*msg="embedded NATS started" url=\(nats:[^ ]*\).*/\1/p' "$data/serve.log" | head -n 1)
    [ -n "$nats" ] || { echo "kino serve did not log its NATS address:"; cat "$data/serve.log"; exit 1; }
    ./bin/kino accounts create demo --plan business --data "$data" --nats "$nats"
    key=$(./bin/kino keys create demo --label demo --data "$data" --nats "$nats" | tail -n 1)
    ./bin/kino collections create demo demo "Demo videos" --data "$data" --nats "$nats"
    echo "generating a 10 s 1280x720 sample with ffmpeg..."
    ffmpeg -loglevel error -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 \
        -t 10 -pix_fmt yuv420p -c:v libx264 -preset veryfast -c:a aac "$data/sample.mp4"
    ./bin/kino upload "$data/sample.mp4" --collection demo --key "$key" --url http://127.0.0.1:{{port}}/v1 --wait
    echo
    echo "API key: $key   (try: curl -H 'Authorization: Bearer $key' http://127.0.0.1:{{port}}/v1/videos)"
    echo "kino is running; press Ctrl-C to stop."
    wait $pid

# Three kino serve nodes on loopback whose embedded NATS form one cluster (streams replicated 3 times) and media in its object store (--media nats); uploads a sample through node 0 and prints every node's API and player URLs. Ctrl-C stops them and removes their data.
cluster port="8091": ensure-ffmpeg build
    #!/usr/bin/env bash
    set -euo pipefail
    base={{port}}
    root=$(mktemp -d -t kino-cluster-XXXX)
    chmod 711 "$root" # as root, ffmpeg runs as nobody and must pass through it
    pids=()
    cleanup() {
        trap "" EXIT INT TERM # finish the cleanup even when just sends a second signal
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$root"
        echo "cluster stopped; $root removed"
    }
    trap cleanup EXIT
    trap 'cleanup; exit 0' INT TERM # Ctrl-C is how it stops
    # API on port+i, NATS clients on port+100+i, routes on port+200+i.
    routes=""
    for i in 0 1 2; do routes+="${routes:+,}nats://127.0.0.1:$((base + 200 + i))"; done
    ./bin/kino cluster init --data "$root/node0" >/dev/null
    for i in 0 1 2; do
        d="$root/node$i"
        if [ "$i" != 0 ]; then mkdir -m 711 "$d"; cp -a "$root/node0/nats-creds" "$root/node0/secret.key" "$d/"; fi
        ./bin/kino serve --data "$d" --addr "127.0.0.1:$((base + i))" --nats-listen "127.0.0.1:$((base + 100 + i))" \
            --nats-cluster "127.0.0.1:$((base + 200 + i))" --nats-routes "$routes" --nats-name "node$i" --media nats 2> "$root/node$i.log" &
        pids+=($!)
    done
    echo "starting three nodes (the cluster elects its leaders first: a few seconds)..."
    for i in 0 1 2; do
        for n in $(seq 600); do
            curl -fsS "http://127.0.0.1:$((base + i))/healthz" >/dev/null 2>&1 && break
            kill -0 "${pids[$i]}" 2>/dev/null || { echo "node$i exited:"; cat "$root/node$i.log"; exit 1; }
            [ "$n" = 600 ] && { echo "node$i not serving after 120 s:"; tail -n 20 "$root/node$i.log"; exit 1; }
            sleep 0.2
        done
    done
    nats="--data $root/node0 --nats nats://127.0.0.1:$((base + 100))"
    ./bin/kino accounts create demo --plan business $nats >/dev/null
    key=$(./bin/kino keys create demo --label cluster $nats | tail -n 1)
    ./bin/kino collections create demo demo "Demo videos" $nats >/dev/null
    echo "generating a 5 s 640x360 sample with ffmpeg..."
    ffmpeg -loglevel error -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000 \
        -t 5 -pix_fmt yuv420p -c:v libx264 -preset veryfast -c:a aac "$root/sample.mp4"
    out=$(./bin/kino upload "$root/sample.mp4" --collection demo --key "$key" --url "http://127.0.0.1:$base/v1" --wait)
    id=$(sed -n 's/^video \([0-9A-Z]*\) COMPLETED.*/\1/p' <<<"$out")
    echo
    for i in 0 1 2; do
        echo "node$i  API http://127.0.0.1:$((base + i))/v1   player http://127.0.0.1:$((base + i))/play/$id   log $root/node$i.log"
    done
    echo "API key: $key   (try: curl -H 'Authorization: Bearer $key' http://127.0.0.1:$((base + 1))/v1/videos)"
    echo "the sample was uploaded through node0; every node lists and plays it from the cluster's object store. Ctrl-C stops the cluster."
    wait
