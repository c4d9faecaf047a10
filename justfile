# Recipes for developers; nothing here is needed to build or test (see README.md).

# build the plload binary
build:
    go build -o plload .

# the test command CI runs
test:
    go test ./...

# formatting and static checks
lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...

# benchmarks (figures go in bench/README.md)
bench:
    go test ./... -run '^$' -bench . -benchtime 5x -count 5

# fuzz the scenario parser for a minute
fuzz:
    go test ./workload -run '^$' -fuzz FuzzParse -fuzztime 60s

# everything CI checks
ci:
    bash .ci/run
