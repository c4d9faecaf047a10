module github.com/plload/plload

go 1.26.0

require (
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
	github.com/tiktoken-go/tokenizer v0.10.0
	github.com/urfave/cli/v3 v3.14.0
	golang.org/x/sync v0.25.0
)

require github.com/dlclark/regexp2/v2 v2.5.1 // indirect
