package workload

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Severity tells an error (the scenario cannot run) from a warning (it can, but a user should look).
type Severity int

const (
	// SeverityError stops the scenario from running.
	SeverityError Severity = iota
	// SeverityWarning is printed; the scenario still runs.
	SeverityWarning
)

// Issue is one problem found in a scenario file, located at a YAML path and a line and column.
type Issue struct {
	Severity Severity
	File     string
	Line     int
	Column   int
	Path     string // YAML path such as load.stages[1].concurrency; empty for the whole file
	Message  string // what was found and what is accepted
}

func (i *Issue) Error() string {
	var b strings.Builder
	b.WriteString(i.File)
	if i.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", i.Line, i.Column)
	}
	b.WriteString(": ")
	if i.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(": ")
	}
	b.WriteString(i.Message)
	return b.String()
}

// Issues is every error and warning found in one scenario file, in file order.
type Issues []*Issue

// Errors returns only the issues that stop the scenario from running.
func (is Issues) Errors() Issues { return is.filter(SeverityError) }

// Warnings returns only the issues that are printed but let the scenario run.
func (is Issues) Warnings() Issues { return is.filter(SeverityWarning) }

func (is Issues) filter(s Severity) Issues {
	var out Issues
	for _, i := range is {
		if i.Severity == s {
			out = append(out, i)
		}
	}
	return out
}

// Err returns the errors as one error (nil when there are none), so callers can use errors.As.
func (is Issues) Err() error {
	errs := is.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &ScenarioError{Issues: errs}
}

func (is Issues) sortByPosition() {
	sort.SliceStable(is, func(a, b int) bool {
		if is[a].Line != is[b].Line {
			return is[a].Line < is[b].Line
		}
		return is[a].Column < is[b].Column
	})
}

// ScenarioError is returned when a scenario has one or more errors; it lists all of them.
type ScenarioError struct {
	Issues Issues
}

func (e *ScenarioError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.Error()
	}
	return strings.Join(lines, "\n")
}

// IsScenarioError reports whether err (or anything it wraps) is a bad-scenario error.
func IsScenarioError(err error) bool {
	var se *ScenarioError
	return errors.As(err, &se)
}

// suggest returns the closest candidate to s when it is close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	// A number written another way is the same number ("2.0" is HTTP "2", not "1.1", which is as
	// few edits away).
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		for _, c := range candidates {
			if g, err := strconv.ParseFloat(c, 64); err == nil && f == g {
				return c
			}
		}
	}
	best, bestDist := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, counted in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
