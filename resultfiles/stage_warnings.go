package resultfiles

import (
	"fmt"

	"github.com/plload/plload/workload"
)

// FailuresExplainStrain reports whether a stage's failures explain its client's strain: when the
// target was out (aborted, or outages) or most requests failed, the busy CPU and start lag are the
// failures' doing (a session that fails at once starts the next), and a warning that blames the
// machine would send the user the wrong way. plload run and plload merge both ask it.
func FailuresExplainStrain(aborted string, outages, errors, ok int) bool {
	return aborted != "" || outages > 0 || errors > 0 && errors >= ok
}

// ReuseWarning is the stage's dataset-reuse warning ("" when none applies): its pool of poolSize
// sessions ran dry and reused were replayed again. Not said when failures explain it (sessions that
// fail at once use the pool up), nor with a nonce at the start of every request, where a repeat
// cannot hit the prefix cache, which is what the warning is for.
func ReuseWarning(sc *workload.Scenario, poolSize, reused int, explained bool) string {
	if reused == 0 || explained || sc.NonceAt() == workload.NonceStart {
		return ""
	}
	advice := "raise load.session_pool_factor or sessions"
	if sc.Source() != nil {
		advice = "the file's conversations were replayed again: a longer file, or workload.nonce, keeps a repeat from hitting the server's prefix cache"
	}
	return fmt.Sprintf("dataset reuse: the pool of %d sessions ran dry and %d sessions were reused (%s)", poolSize, reused, advice)
}
