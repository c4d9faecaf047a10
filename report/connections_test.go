package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/resultfiles"
)

// TestReportSaysProtocolAndConnections: a stage whose engine counted its connections and protocol
// has a row saying both, HTTP/2.0 written HTTP/2; stages that did not record them (older files,
// AIPerf's) leave the section out.
func TestReportSaysProtocolAndConnections(t *testing.T) {
	sc, st := goldenStages(t)
	if md := Markdown(resultfiles.New(sc, st, resultfiles.Meta{}), sc); strings.Contains(md, "Protocol and connections") {
		t.Fatalf("stages without a protocol got the section:\n%s", md)
	}
	st[0].Engine.Protocol, st[0].Engine.Connections = "HTTP/2.0", 1
	st[1].Engine.Protocol, st[1].Engine.Connections = "HTTP/1.1", 16
	md := Markdown(resultfiles.New(sc, st, resultfiles.Meta{}), sc)
	for _, want := range []string{"## Protocol and connections", "| stage | protocol | connections |", "| 01 | HTTP/2 | 1 |", "| 02 | HTTP/1.1 | 16 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
