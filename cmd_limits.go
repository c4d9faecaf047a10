package main

import (
	"fmt"
	"syscall"

	"github.com/plload/plload/workload"
)

// fileHeadroom is the descriptors a run needs besides its connections: records, logs, the server
// metrics scrape, the RTT probe, a Prometheus listener, standard streams.
const fileHeadroom = 64

// checkOpenFiles refuses, before anything is written or sent, a stage that would hold more
// connections than this process may open files: past the limit every new connection fails, and the
// run would measure the machine's limit as the server's errors. Go raises the soft limit to the hard
// one at start; the hard limit only an administrator can raise.
func checkOpenFiles(sc *workload.Scenario) error {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return nil // not knowable here; the run will say so in its errors if it comes to that
	}
	for i, st := range sc.Load.Stages {
		conns := st.Concurrency + st.MaxConcurrency
		need, mockNote := conns+fileHeadroom, ""
		if sc.UsesMock() {
			need += conns
			mockNote = ", with the in-process mock holding the other end of each"
		}
		if uint64(need) <= lim.Cur {
			continue
		}
		field := "concurrency"
		if st.MaxConcurrency > 0 {
			field = "max_concurrency"
		}
		issue := sc.IssueAt(fmt.Sprintf("load.stages[%d].%s", i, field), fmt.Sprintf(
			"%d open connections need about %d file descriptors%s, but this process may open %d (hard limit %d); raise the limit (`ulimit -n %d` in the shell, LimitNOFILE= for a systemd service) or lower the concurrency; nothing was sent",
			conns, need, mockNote, lim.Cur, lim.Max, need))
		return badInput("%v", issue)
	}
	return nil
}
