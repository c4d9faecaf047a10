package engine

import (
	"runtime/debug"
	"testing"
)

// TestMemoryLimit: the limit is the smallest of the container's and the machine's memory; "max",
// v1's "no limit" number and unreadable files leave the others.
func TestMemoryLimit(t *testing.T) {
	const meminfo = "MemTotal:       24683584 kB\nMemFree:        22934792 kB\n"
	machine := int64(24683584) << 10
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"machine only", map[string]string{"/proc/meminfo": meminfo}, machine},
		{"cgroup v2 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "2147483648\n"}, 2 << 30},
		{"cgroup v2 max", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, machine},
		{"cgroup v1 no limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, machine},
		{"cgroup v1 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824"}, 1 << 30},
		{"limit over the machine", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "99999999999999"}, machine},
		{"nothing readable", map[string]string{}, 0},
	}
	for _, tc := range cases {
		got := memoryLimit(func(path string) []byte {
			if s, ok := tc.files[path]; ok {
				return []byte(s)
			}
			return nil
		})
		if got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestOverlappingRunsPutTheRuntimeBack: two Runs that overlap (plload ab) keep GOGC=400 until the
// last one ends, whichever order they end in, and then the process has its own settings again.
func TestOverlappingRunsPutTheRuntimeBack(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	gc := func() int { v := debug.SetGCPercent(-1); debug.SetGCPercent(v); return v }
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	ownGC, ownLimit := gc(), limit()
	first := tuneRuntime()
	second := tuneRuntime()
	first()
	first() // a second call changes nothing
	if gc() != 400 || limit() == ownLimit && memoryLimit(readSmall) > 0 {
		t.Fatalf("with one Run still going: GOGC %d, limit %d; want 400 and the machine's limit", gc(), limit())
	}
	second()
	if gc() != ownGC || limit() != ownLimit {
		t.Fatalf("after both: GOGC %d, limit %d; want the process's own %d, %d", gc(), limit(), ownGC, ownLimit)
	}
}
