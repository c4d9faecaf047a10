package report

import (
	"fmt"
	"strings"
)

// connectionsSection says, per stage, which protocol carried the requests and on how many
// connections: over HTTP/2 streams share connections, so a stage of 100 sessions may be one
// connection where HTTP/1.1 needed 100, and a reader comparing two runs should see it. Absent when no
// stage recorded it (files written before plload measured it, or AIPerf's).
func connectionsSection(rows []runStage, withRun bool) string {
	var table [][]string
	for _, rs := range rows {
		e := rs.st.Engine
		if e.Protocol == "" {
			continue
		}
		table = append(table, append(stageCells(rs, withRun), mdCell(protocolName(e.Protocol)), fmt.Sprint(e.Connections)))
	}
	if len(table) == 0 {
		return ""
	}
	return "\n## Protocol and connections\n\n" + markdownTable(stageHeader(withRun, "protocol", "connections"), table) +
		"\nConnections counts those that carried the stage's requests, the RTT probe's included when requests reused it; on HTTP/2 concurrent requests are streams sharing a connection, up to the server's stream limit.\n"
}

// protocolName is a response's protocol as people write it: HTTP/2 for Go's "HTTP/2.0".
func protocolName(proto string) string {
	return strings.ReplaceAll(proto, "HTTP/2.0", "HTTP/2")
}
