package gate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// GateResult is gate.json.
type GateResult struct {
	SchemaVersion int    `json:"schema_version"`
	Candidate     string `json:"candidate"`
	Baseline      string `json:"baseline,omitempty"`
	// Verdict is pass, fail or undecided (nothing decided, or a run kept a possible regression from a
	// decision; see GateVerdict).
	Verdict string `json:"verdict"`
	// AllowUndecided records --allow-undecided: an undecided verdict then exits 0.
	AllowUndecided bool `json:"allow_undecided,omitempty"`
	// Passed is whether the gate let the run through (exit 0): a pass, or an undecided verdict that
	// --allow-undecided accepted.
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
}

// NewGateResult fills in the verdict of a set of checks.
func NewGateResult(candidate, baseline string, checks []Check, allowUndecided bool) GateResult {
	v := GateVerdict(checks)
	return GateResult{SchemaVersion: resultfiles.SchemaVersion, Candidate: candidate, Baseline: baseline, Verdict: v,
		AllowUndecided: allowUndecided, Passed: v == VerdictPass || (v == VerdictUndecided && allowUndecided), Checks: checks}
}

// verdict is g.Verdict, worked out from the checks for a GateResult built by hand.
func (g GateResult) verdict() string {
	if g.Verdict != "" {
		return g.Verdict
	}
	return GateVerdict(g.Checks)
}

// UndecidedNotes are the lines that say, once per stage and run, which run left checks undecided
// because of itself — its client was strained, its records are gone, it lacks the metric or the
// stage — and why: those are things a user can fix (a quieter machine, keeping the records), so they
// are never left to a check's message alone.
func UndecidedNotes(g GateResult) []string {
	type key struct {
		stage       int
		run, reason string
	}
	var order []key
	count := map[key]int{}
	for _, c := range g.Checks {
		if !RunKept(c) {
			continue
		}
		k := key{c.Stage, c.Run, c.Reason}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	dirs := map[string]string{"baseline": g.Baseline, "candidate": g.Candidate}
	var out []string
	for _, k := range order {
		var where []string
		for _, run := range strings.Split(k.run, " and ") {
			where = append(where, fmt.Sprintf("%s run %s", run, dirs[run]))
		}
		n := fmt.Sprintf("%d checks", count[k])
		if count[k] == 1 {
			n = "1 check"
		}
		out = append(out, fmt.Sprintf("stage %02d: %s not decided because of the %s: %s", k.stage, n, strings.Join(where, " and the "), k.reason))
	}
	return out
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
		case StatusFail:
			s.Failures++
			tc.Failure = &junitMessage{Message: c.Message, Type: c.Kind, Text: c.Message}
		case StatusInconclusive:
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

// PrintGate prints each check, failures with both numbers and the interval, then a warning line for
// each run that left checks undecided, then the verdict.
func PrintGate(w io.Writer, g GateResult) {
	for _, c := range g.Checks {
		fmt.Fprintf(w, "%-12s %s: %s\n", strings.ToUpper(c.Status), c.Name, c.Message)
	}
	for _, n := range UndecidedNotes(g) {
		fmt.Fprintf(w, "warning: %s\n", n)
	}
	fmt.Fprintln(w, verdictLine(g))
}

// verdictLine is the gate's last line; it counts the checks not decided, so a pass with undecided
// checks never reads as a clean pass.
func verdictLine(g GateResult) string {
	undecided := 0
	for _, c := range g.Checks {
		if c.Status == StatusInconclusive {
			undecided++
		}
	}
	count := fmt.Sprintf("%d checks", len(g.Checks))
	if len(g.Checks) == 1 {
		count = "1 check"
	}
	tail := ""
	if undecided > 0 {
		tail = fmt.Sprintf(", %d not decided", undecided)
	}
	switch g.verdict() {
	case VerdictFail:
		return fmt.Sprintf("gate FAILED (%s%s): %s", count, tail, failedWhy(g.Checks))
	case VerdictUndecided:
		what := fmt.Sprintf("gate UNDECIDED (%s, none decided): nothing was checked", count)
		if len(g.Checks) > 0 && undecided == len(g.Checks) {
			what = fmt.Sprintf("gate UNDECIDED (%s, none decided): %s", count, UndecidedWhy(g))
		} else if undecided > 0 {
			what = fmt.Sprintf("gate UNDECIDED (%s%s): %s", count, tail, UndecidedWhy(g))
		}
		if g.AllowUndecided {
			return what + "; let through by --allow-undecided"
		}
		return what + " (exit 3; --allow-undecided lets it through)"
	}
	return fmt.Sprintf("gate PASSED (%s%s)", count, tail)
}

// failedWhy names the first failed check and its numbers, and how many more failed, so the last line
// of a failed gate says what failed without a scroll up.
func failedWhy(checks []Check) string {
	var first *Check
	n := 0
	for i, c := range checks {
		if c.Status == StatusFail {
			if first == nil {
				first = &checks[i]
			}
			n++
		}
	}
	if first == nil {
		return "no check failed"
	}
	why := first.Name + " — " + first.Message
	if n > 1 {
		why += fmt.Sprintf("; and %d more failed", n-1)
	}
	return why
}

// UndecidedWhy says what kept the gate's checks from a decision, and what would decide them, in one
// phrase per cause, in the order the checks first show it: "a stage cut short or a replay that fell
// behind its trace (rerun it whole)", "a strained client (a quieter machine)", ….
func UndecidedWhy(g GateResult) string {
	phrases := map[string]string{
		CauseNotMeasured:     "a stage cut short or a replay that fell behind its trace, whose numbers decide nothing (rerun it whole)",
		CauseStrained:        "a strained client, which could have swayed them (a quieter machine would decide them)",
		CauseNoRecords:       "records that are gone (keep profile_export.jsonl)",
		CauseUnknown:         "values a run does not have (no successful request with them)",
		CauseNoBaselineStage: "stages the baseline does not have",
		CauseThin:            "thin evidence (more requests per stage would decide them)",
		CauseFewSamples:      "too few requests (more requests per stage would decide them)",
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range g.Checks {
		if c.Status != StatusInconclusive || seen[c.Cause] {
			continue
		}
		seen[c.Cause] = true
		if p, ok := phrases[c.Cause]; ok {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "see the INCONCLUSIVE lines"
	}
	return "not decided because of " + strings.Join(out, "; ") + "; see the INCONCLUSIVE and warning lines"
}

// GitHub writes workflow annotations (::error / ::warning lines) to w and, when summaryPath is set,
// appends a Markdown summary there ($GITHUB_STEP_SUMMARY).
func GitHub(w io.Writer, summaryPath string, g GateResult) error {
	esc := func(s string) string {
		return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	}
	for _, c := range g.Checks {
		switch c.Status {
		case StatusFail:
			fmt.Fprintf(w, "::error title=plload gate: %s::%s\n", esc(c.Name), esc(c.Message))
		case StatusInconclusive:
			fmt.Fprintf(w, "::warning title=plload gate: %s::%s\n", esc(c.Name), esc(c.Message))
		}
	}
	for _, n := range UndecidedNotes(g) {
		fmt.Fprintf(w, "::warning title=plload gate: not decided::%s\n", esc(n))
	}
	if g.verdict() == VerdictUndecided {
		level := "error"
		if g.AllowUndecided {
			level = "warning"
		}
		fmt.Fprintf(w, "::%s title=plload gate undecided::%s\n", level, esc(verdictLine(g)))
	}
	if summaryPath == "" {
		return nil
	}
	f, err := os.OpenFile(summaryPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	verdict := map[string]string{VerdictPass: "passed", VerdictFail: "**failed**", VerdictUndecided: "**undecided**"}[g.verdict()]
	fmt.Fprintf(f, "## plload gate %s\n\n%s\n\n", verdict, verdictLine(g))
	for _, n := range UndecidedNotes(g) {
		fmt.Fprintf(f, "- warning: %s\n", n)
	}
	fmt.Fprintf(f, "\n| status | check | result |\n| --- | --- | --- |\n")
	for _, c := range g.Checks {
		fmt.Fprintf(f, "| %s | %s | %s |\n", c.Status, c.Name, strings.ReplaceAll(c.Message, "|", "\\|"))
	}
	_, err = f.WriteString("\n")
	return err
}
