package workload

import (
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written in scenario files as 500ms, 30s, 3m or 1h.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String prints the duration in the shortest form a scenario file accepts back (1m30s, 200ms).
func (d Duration) String() string { return formatDuration(time.Duration(d)) }

// MarshalYAML writes the duration as a string such as "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	s := d.String()
	// time.Duration prints 2m0s and 1h0m0s; a scenario reads better as 2m and 1h.
	for strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parseDuration reads a scenario duration. A bare number is refused (except 0), because "30" could
// mean seconds or milliseconds and a wrong guess is a wrong measurement.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("found %q; accepted: a duration with a unit, such as 500ms, 30s, 3m or 1h", s)
	}
	return d, nil
}
