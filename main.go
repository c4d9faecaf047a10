// Command plload load-tests OpenAI-compatible LLM servers with chatbot-shaped traffic and turns the
// measurement into latency percentiles, throughput, goodput, cache hit rate, SLO verdicts and cost.
// Its commands live in package cli; see README.md.
package main

import (
	"context"
	"io"
	"log"
	"os"

	"github.com/plload/plload/cli"
)

func main() {
	// First: a signal in the first instants (the scenario still loading) is plload's interrupt, exit
	// 130, not the default action's kill.
	cli.CatchSignals()
	// plload writes nothing through the standard logger; net/http does, and what it prints (an
	// unsolicited response's first bytes) is server text no secret was masked in.
	log.SetOutput(io.Discard)
	os.Exit(cli.Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}
