# Recipes for developers; nothing here is needed to build or test (see README.md).

# build the plload binary: static (no cgo), so it runs on any Linux without libc
build:
    CGO_ENABLED=0 go build -o plload .

# the test command CI runs
test:
    go test ./...

# formatting and static checks
lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...

# benchmarks (figures go in bench/README.md), then the self-test, whose final line is README's figure.
# The ladder climbs to where a 2-core machine breaks the 1 ms bound (~1 min), so a FAIL at its top is
# a finding to read, not a broken recipe: `-` keeps it from failing the recipe.
bench:
    go test ./... -run '^$' -bench . -benchtime 5x -count 5
    -go run . selftest --ladder 1,10,100,500,1000 --duration 4s --warmup 2s

# fuzz the scenario parser for a minute
fuzz:
    go test ./workload -run '^$' -fuzz FuzzParse -fuzztime 60s

# everything CI checks
ci:
    bash .ci/run
