// Package timingtier is for tests only: it says whether this test run judges timing tolerances.
//
// The README's test command, `go test ./...`, must pass on a user's busy laptop, so by default no
// test asserts anything that depends on the machine's speed: a send lag, a rate's or a gap's
// tolerance, a search's knee, a gate's regression verdict. Those claims are the timing tier's, which
// runs when PLLOAD_TIMING=1 (`.ci/run` runs it on its own, one package at a time). A test keeps its
// functional part in every run and asks Judge before each timing check; a test that is a timing
// claim and nothing else calls Only first.
//
// The race detector slows every goroutine several-fold, so under -race the tier is off whatever
// PLLOAD_TIMING says.
package timingtier

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the tier on ("1").
const Env = "PLLOAD_TIMING"

// On reports whether timing tolerances are judged in this run: PLLOAD_TIMING=1 and no race detector.
func On() bool { return os.Getenv(Env) == "1" && !race }

// why is the reason the tier is off, for the log and skip lines.
func why() string {
	if race {
		return "the race detector slows the client several-fold"
	}
	return "set " + Env + "=1 for the timing tier"
}

// Judge reports whether t should assert its timing tolerance named what (such as "send lag p50
// ≤ 5 ms"); when it should not, it logs that the check was not judged and why, so that -v shows
// what a default run left out.
func Judge(t testing.TB, what string) bool {
	t.Helper()
	if On() {
		return true
	}
	t.Logf("not judged: %s (a timing claim; %s)", what, why())
	return false
}

// Only skips t unless the tier is on: for a test whose every assertion is a timing claim.
func Only(t testing.TB) {
	t.Helper()
	if !On() {
		t.Skipf("a timing claim only: %s", why())
	}
}
