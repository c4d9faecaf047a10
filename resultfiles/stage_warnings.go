package resultfiles

import (
	"fmt"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// FailuresExplainStrain reports whether a stage's failures explain its client's strain: when the
// target was out (aborted, or outages) or most requests failed, the busy CPU and start lag are the
// failures' doing (a session that fails at once starts the next), and a warning that blames the
// machine would send the user the wrong way. plload run and plload merge both ask it.
func FailuresExplainStrain(aborted string, outages, errors, ok int) bool {
	return aborted != "" || outages > 0 || errors > 0 && errors >= ok
}

// StageReuse is what the dataset-reuse warning says of a stage: its pool's size, the sessions it
// started and those of them that repeated a conversation the run had sent (engine counts), the
// cache hit of the repeats' requests against the others' (from the records), and whether failures
// explain the repeats.
type StageReuse struct {
	Pool, Sessions, Reused int
	Cache                  *metrics.ReuseCache
	Explained              bool
}

// ReuseWarning is the stage's dataset-reuse warning ("" when no session repeated a conversation):
// the repeats' share of the sessions started, the cache hit of their requests against the others',
// and what kept (or did not keep) a repeat off the server's prefix cache — a repeat answered from
// the cache flatters every latency and the capacity a search finds, so it is said whatever else
// explains it.
func ReuseWarning(sc *workload.Scenario, r StageReuse) string {
	if r.Reused == 0 {
		return ""
	}
	share := ""
	if r.Sessions > 0 {
		share = fmt.Sprintf(" (%.1f %%)", 100*float64(r.Reused)/float64(r.Sessions))
	}
	why := "its pool of %d sessions ran dry"
	if sc.Source() != nil {
		why = "its pool of %d sessions ran dry or the file's conversations started over"
	}
	line := fmt.Sprintf("dataset reuse: %d of %d sessions started%s repeated a conversation the run had sent ("+why+"; load.session_reuse: %s)",
		r.Reused, r.Sessions, share, r.Pool, sc.Load.SessionReuse)
	if r.Explained {
		line += ", many of them because sessions failed at once and used the pool up"
	}
	line += "; cache hit " + reuseCacheText(r.Cache) + "; " + reuseNonceText(sc)
	if sc.Source() == nil && sc.Load.SessionReuse.Wraps() {
		return line + "; load.session_reuse: fresh draws new sessions past the pool instead"
	}
	return line + "; a longer file sends fewer repeats"
}

// reuseCacheText is the cache hit of the repeats' requests against the others'.
func reuseCacheText(c *metrics.ReuseCache) string {
	if c == nil {
		return "unknown: no request of a repeat succeeded in the window"
	}
	pct := func(g metrics.ReuseGroup) string {
		if !g.CacheHit.OK {
			return "n/a (no usage)"
		}
		return fmt.Sprintf("%.1f %%", 100*g.CacheHit.V)
	}
	line := fmt.Sprintf("%s on the repeats' %d requests", pct(c.Reused), c.Reused.Requests)
	if c.Fresh.Requests == 0 { // every request was a repeat's: there is nothing to set it against
		return line
	}
	return line + fmt.Sprintf(", %s on the others' %d", pct(c.Fresh), c.Fresh.Requests)
}

// reuseNonceText says what kept a repeat off the server's prefix cache, if anything did. What comes
// before a nonce after the system prompt is a persona in a synthetic workload; a dataset's or trace's
// conversations have no personas, only their own system prompt.
func reuseNonceText(sc *workload.Scenario) string {
	before := "its persona"
	if sc.Source() != nil {
		before = "its system prompt"
	}
	switch {
	case sc.NonceAt() == workload.NonceStart:
		return "every request began with a nonce (workload.nonce), so a repeat could not hit the cache"
	case sc.NonceAt() == workload.NonceAfterSystem:
		return "every request carried a nonce after its system prompt (workload.nonce: after_system), so a repeat could hit the cache on " + before + " only"
	case sc.Load.SessionReuse == workload.ReuseWrap:
		return "each repeat carried a nonce of its own after the system prompt, so it could hit the cache on " + before + " only"
	}
	return "no nonce kept a repeat off the cache: repeats were sent byte for byte, and the server may have answered them from its cache"
}
