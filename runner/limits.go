package runner

import (
	"fmt"
	"io"
	"math"
	"syscall"

	"github.com/plload/plload/workload"
)

// fileHeadroom is the descriptors a run needs besides its connections: records, logs, the server
// metrics scrape, the RTT probe, a Prometheus listener, standard streams.
const fileHeadroom = 64

// CheckOpenFiles refuses, before anything is written or sent, a stage that would hold more
// connections than this process may open files: past the limit every new connection fails, and the
// run would measure the machine's limit as the server's errors. Go raises the soft limit to the hard
// one at start; the hard limit only an administrator can raise.
//
// The connections are a concurrency stage's sessions, an arrival_rate stage's max_concurrency, or
// request_rate's and replay's load.max_in_flight. That last one is a cap, not a need: when it is
// the default (nobody chose it), a limit below it is a warning on stderr, because a run whose rate ×
// latency stays under the limit never opens that many. An arrival_rate session holds a connection
// only while its turn streams (the idle pool keeps no more than the recent peak), so sessions that
// think between turns need far fewer: when twice the connections expected at once (Little's law,
// Estimate.InFlight) fit, max_concurrency over the limit is a warning too (bench/README.md's third pass: 100,000
// thinking sessions under a 20,000-file limit).
func CheckOpenFiles(sc *workload.Scenario, stderr io.Writer) error {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return nil // not knowable here; the run will say so in its errors if it comes to that
	}
	for i, st := range sc.Load.Stages {
		conns, field := sc.Load.OpenCap(i)
		need, mockNote := conns+fileHeadroom, ""
		if sc.UsesMock() {
			need += conns
			mockNote = ", with the in-process mock holding the other end of each"
		}
		if uint64(need) <= lim.Cur {
			continue
		}
		msg := fmt.Sprintf("%d open connections need about %d file descriptors%s, but this process may open %d (hard limit %d); raise the limit (`ulimit -n %d` in the shell, LimitNOFILE= for a systemd service) or lower the %s",
			conns, need, mockNote, lim.Cur, lim.Max, need, field)
		if sc.Load.LoadMode().SessionSlots {
			expected := sc.EstimateStage(st).InFlight
			if want := 2*expected*float64(need-fileHeadroom)/float64(conns) + fileHeadroom; want <= float64(lim.Cur) {
				warning := sc.IssueAt(field, fmt.Sprintf("%s; a session holds a connection only while its turn streams, and about %.0f are expected at once (with %s), so the run goes on; if more are ever open, their requests fail with \"too many open files\"",
					msg, math.Ceil(expected), sc.Assumption()))
				warning.Severity = workload.SeverityWarning
				fmt.Fprintln(stderr, warning)
				continue
			}
			msg += fmt.Sprintf(" (a session holds a connection only while its turn streams: about %.0f are expected at once, with %s, and twice that must fit)", math.Ceil(expected), sc.Assumption())
		}
		if field == "load.max_in_flight" && conns == workload.DefaultMaxInFlight {
			fmt.Fprintf(stderr, "%s: warning: %s: the default cap of %d requests in flight is more than this machine allows: %s; the run goes on, and fails requests only if that many are ever in flight\n",
				sc.File, field, conns, msg)
			return nil
		}
		return badInput("%v", sc.IssueAt(field, msg+"; nothing was sent"))
	}
	return nil
}
