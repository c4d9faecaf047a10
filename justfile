# Recipes for developers; nothing here is needed to build or test (see README.md).

# build the plload binary: static (no cgo), so it runs on any Linux without libc
build:
    CGO_ENABLED=0 go build -o plload .

# the test command CI runs
test:
    go test ./...

# the timing tier: the tests' timing claims judged (PLLOAD_TIMING=1), one package at a time, on a
# quiet machine (.ci/run runs exactly the tests that logged a claim as not judged)
timing:
    PLLOAD_TIMING=1 go test -count=1 -p 1 ./engine/... ./cli ./cluster ./selftest ./timingtier

# formatting and static checks
lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...

# benchmarks (figures go in bench/README.md; ChunkCost prints plload's CPU per chunk beside a bare
# net/http loop's and their ratio, and the previous release's beside them when PLLOAD_BENCH_PREVIOUS
# names its `go test -c ./bench` binary), then the self-test, whose final line is bench/README.md's figure.
# The ladder climbs to where a 2-core machine breaks the 1 ms bound (~1 min), so a FAIL at its top is
# a finding to read, not a broken recipe: `-` keeps it from failing the recipe.
bench:
    go test ./... -run '^$' -bench . -benchtime 5x -count 5
    PLLOAD_OPENLOOP=1 go test ./bench -run '^$' -bench OpenLoop -benchtime 1x -count 3
    PLLOAD_CHUNKCOST=1 go test ./bench -run '^$' -bench ChunkCost -benchtime 1x -count 3
    -go run . selftest --ladder 1,10,100,500,1000 --duration 4s --warmup 2s

# fuzz the scenario parser for a minute
fuzz:
    go test ./workload -run '^$' -fuzz FuzzParse -fuzztime 60s

# mutation testing (github.com/go-gremlins/gremlins v0.6.0): a change to the code that no test notices
# is a missing test. Figures per package go in bench/README.md ("Mutation testing"); sse/ and metrics/
# must keep an efficacy of at least 85 %. One worker and a timeout 20× the coverage run, because on a
# shared machine a short timeout reads a slow surviving mutant as "timed out" instead of "lived".
# Slow (engine/ most of all): name packages to run fewer, e.g. `just mutate ./sse ./metrics`.
mutate *pkgs="./sse ./metrics ./report ./engine":
    for p in {{pkgs}}; do \
        case "$p" in ./sse|./metrics) min=84.99 ;; *) min=0 ;; esac; \
        go run github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0 unleash --workers 1 --test-cpu 1 \
            --timeout-coefficient 20 --threshold-efficacy "$min" "$p" || exit 1; \
    done

# everything CI checks
ci:
    bash .ci/run
