package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plload/plload/metrics"
)

// GateResult is gate.json.
type GateResult struct {
	SchemaVersion int     `json:"schema_version"`
	Candidate     string  `json:"candidate"`
	Baseline      string  `json:"baseline,omitempty"`
	Passed        bool    `json:"passed"`
	Checks        []Check `json:"checks"`
}

// WriteGateJSON writes gate.json into dir.
func WriteGateJSON(dir string, g GateResult) error {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "gate.json"), append(data, '\n'))
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per check (failures as <failure>, inconclusive as <skipped>), in the
// common JUnit XML layout CI systems read.
func WriteJUnit(path string, g GateResult) error {
	s := junitSuite{Name: "plload gate", Tests: len(g.Checks)}
	for _, c := range g.Checks {
		tc := junitCase{Name: c.Name, ClassName: "plload." + c.Kind, SystemOut: c.Message}
		switch c.Status {
		case "fail":
			s.Failures++
			tc.Failure = &junitMessage{Message: c.Message, Type: c.Kind, Text: c.Message}
		case "inconclusive":
			s.Skipped++
			tc.Skipped = &junitMessage{Message: c.Message}
		}
		s.Cases = append(s.Cases, tc)
	}
	data, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(path, append([]byte(xml.Header), append(data, '\n')...))
}

// PrintGate prints each check; failures carry both numbers and the interval.
func PrintGate(w io.Writer, g GateResult) {
	for _, c := range g.Checks {
		fmt.Fprintf(w, "%-12s %s: %s\n", strings.ToUpper(c.Status), c.Name, c.Message)
	}
	undecided := 0
	for _, c := range g.Checks {
		if c.Status == "inconclusive" {
			undecided++
		}
	}
	tail := ""
	if undecided > 0 { // a pass with undecided checks is not a clean pass: say so on the last line
		tail = fmt.Sprintf(", %d not decided", undecided)
	}
	count := fmt.Sprintf("%d checks", len(g.Checks))
	if len(g.Checks) == 1 {
		count = "1 check"
	}
	if g.Passed {
		fmt.Fprintf(w, "gate PASSED (%s%s)\n", count, tail)
	} else {
		fmt.Fprintf(w, "gate FAILED (%s%s)\n", count, tail)
	}
}

// GitHub writes workflow annotations (::error / ::warning lines) to w and, when summaryPath is set,
// appends a Markdown summary there ($GITHUB_STEP_SUMMARY).
func GitHub(w io.Writer, summaryPath string, g GateResult) error {
	esc := func(s string) string {
		return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	}
	for _, c := range g.Checks {
		switch c.Status {
		case "fail":
			fmt.Fprintf(w, "::error title=plload gate: %s::%s\n", esc(c.Name), esc(c.Message))
		case "inconclusive":
			fmt.Fprintf(w, "::warning title=plload gate: %s::%s\n", esc(c.Name), esc(c.Message))
		}
	}
	if summaryPath == "" {
		return nil
	}
	f, err := os.OpenFile(summaryPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	verdict := "passed"
	if !g.Passed {
		verdict = "**failed**"
	}
	fmt.Fprintf(f, "## plload gate %s\n\n| status | check | result |\n| --- | --- | --- |\n", verdict)
	for _, c := range g.Checks {
		fmt.Fprintf(f, "| %s | %s | %s |\n", c.Status, c.Name, strings.ReplaceAll(c.Message, "|", "\\|"))
	}
	_, err = f.WriteString("\n")
	return err
}
