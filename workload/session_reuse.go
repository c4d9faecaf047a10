package workload

// SessionReuse is load.session_reuse: what a stage does once it has started every session of its
// pool and needs another (docs/scenario.md). A session sent again byte for byte is a prompt the
// server's prefix cache may answer whole, which flatters every latency and the capacity a search
// finds; so a synthetic workload draws new sessions, and a pool that must start over (a dataset or
// a trace, whose conversations are the file's) marks each repeat with a nonce unless asked not to.
type SessionReuse string

// The values load.session_reuse accepts.
const (
	// ReuseFresh draws session n past the pool from the generator of (seed, stage, n), as the pool
	// drew its own: any number of sessions, none repeated, the same ones on every run. Synthetic
	// workloads only.
	ReuseFresh SessionReuse = "fresh"
	// ReuseWrap starts the pool over, in order; each repeat carries a nonce of its own after the
	// system prompt, so the server can cache the persona but not the conversation.
	ReuseWrap SessionReuse = "wrap"
	// ReuseWrapIdentical starts the pool over, in order, byte for byte: the pool's sessions are the
	// only ones sent, and the server may answer a repeat from its cache (a cache test).
	ReuseWrapIdentical SessionReuse = "wrap_identical"
)

// sessionReuses are the accepted values, in the order messages list them.
var sessionReuses = []string{string(ReuseFresh), string(ReuseWrap), string(ReuseWrapIdentical)}

// defaultSessionReuse is fresh for a synthetic workload and wrap for a dataset or trace, whose
// conversations cannot be drawn anew.
func (s *Scenario) defaultSessionReuse() SessionReuse {
	if w := s.Workload; w != nil && (w.Dataset != nil || w.Trace != nil) {
		return ReuseWrap
	}
	return ReuseFresh
}

// Wraps reports whether a stage that needs more sessions than its pool starts the pool over (so
// a pool can run dry), rather than drawing new sessions.
func (r SessionReuse) Wraps() bool { return r == ReuseWrap || r == ReuseWrapIdentical }

// ruleLine is the line hashed after a stage's dataset.jsonl into its sha256: the sessions past the
// pool are part of the workload, so two scenarios that differ only in them never share an identity.
func (r SessionReuse) ruleLine() string {
	switch r {
	case ReuseWrap:
		return "sessions past the pool: the pool's again, in order, each with a nonce after the system prompt\n"
	case ReuseWrapIdentical:
		return "sessions past the pool: the pool's again, in order, byte for byte\n"
	}
	return "sessions past the pool: session n drawn from (seed, stage, n)\n"
}

// sessionReuse checks load.session_reuse.
func (c *checker) sessionReuse() {
	s := c.s
	r := s.Load.SessionReuse
	c.oneOf("load.session_reuse", string(r), sessionReuses...)
	if r == ReuseFresh && s.defaultSessionReuse() != ReuseFresh {
		c.errorf("load.session_reuse", "fresh draws new synthetic sessions, and this workload's conversations are its file's; accepted with workload.dataset or workload.trace: wrap (each repeat with a nonce after the system prompt) or wrap_identical (byte for byte)")
	}
}

// freshAdvice is the dry-pool warning's last words: where new sessions can be drawn, say how.
func freshAdvice(s *Scenario) string {
	if s.defaultSessionReuse() == ReuseFresh {
		return ", or set load.session_reuse: fresh to draw new sessions past the pool"
	}
	return ""
}
