package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// waitLine is the header's command that waits for the shards and resumes the merge.
func waitLine(t *testing.T, header string) string {
	t.Helper()
	for _, l := range strings.Split(header, "\n") {
		if cmd, ok := strings.CutPrefix(l, "#   "); ok && strings.Contains(cmd, "patch job") {
			return cmd
		}
	}
	t.Fatalf("no wait-then-resume command in the header:\n%s", header)
	return ""
}

// TestK8sWaitEnds runs the printed wait under sh with kubectl, date and sleep replaced: kubectl
// reports the shard Job's true conditions and records a patch; date advances 60 s a call, so a Job
// that never ends reaches the timeout at once. The wait must end on Complete (resuming the merge),
// on Failed (resuming it only with --allow-partial), and on its timeout (never resuming it), each
// with the exit status a script can test.
func TestK8sWaitEnds(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	p := testPlan(t, 2)
	// 2 stages: (10 s + 60 s + 30 s drain) + (120 s + 30 s) = 250 s.
	if p.Seconds != 250 {
		t.Fatalf("planned %v s, want 250", p.Seconds)
	}
	limit := p.K8sWaitSeconds()
	if limit < 250+300 || limit > 3600 {
		t.Fatalf("wait limit %d s: want the run, the join timeout and a margin, finite", limit)
	}
	cases := []struct {
		name       string
		conditions string
		allow      bool
		ok, resume bool
		timeout    bool
	}{
		{name: "complete", conditions: "SuccessCriteriaMet Complete", ok: true, resume: true},
		{name: "failed", conditions: "FailureTarget Failed"},
		{name: "failed, partial allowed", conditions: "FailureTarget Failed", allow: true, ok: true, resume: true},
		{name: "never ends", conditions: "", timeout: true},
		{name: "never ends, partial allowed", conditions: "FailureTarget", allow: true, timeout: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.Namespace, o.AllowPartial = "bench", c.allow
			line := waitLine(t, generate(t, p, o).header)
			dir := t.TempDir()
			fake := map[string]string{
				"kubectl": `echo "$*" >> "$FAKE/calls"
case "$*" in *" get job "*) printf '%s' "$CONDITIONS";; esac`,
				"date":  `n=$(cat "$FAKE/now" 2>/dev/null || echo 1000); echo $((n + 60)) > "$FAKE/now"; echo "$n"`,
				"sleep": `:`,
			}
			for name, body := range fake {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(sh, "-c", line)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "FAKE="+dir, "CONDITIONS="+c.conditions)
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.ok {
				t.Errorf("exit %v, want success %v; output:\n%s\ncommand: %s", err, c.ok, out, line)
			}
			calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
			gets := strings.Count(string(calls), " get job ")
			if !strings.Contains(string(calls), "-n bench get job load-r1 ") {
				t.Errorf("kubectl calls do not ask the run's shard Job in its namespace:\n%s", calls)
			}
			resumed := strings.Contains(string(calls), "patch job load-r1-merge")
			if resumed != c.resume {
				t.Errorf("merge resumed %v, want %v; calls:\n%s", resumed, c.resume, calls)
			}
			if c.timeout {
				// Each round reads the clock once after the first: limit ÷ 60 rounds, then it stops.
				if want := int(limit/60) + 1; gets < want-1 || gets > want+1 {
					t.Errorf("%d polls before the timeout, want about %d (a limit of %d s at 60 s a call)", gets, want, limit)
				}
				if !strings.Contains(string(out), strconv.FormatInt(limit, 10)) {
					t.Errorf("the timeout message does not say the limit %d s: %s", limit, out)
				}
			} else if gets != 1 {
				t.Errorf("%d polls, want 1 (the Job had ended)", gets)
			}
		})
	}
}

// TestK8sWaitNoPlannedEnd: a run with no planned end still gets a finite wait, a day, and the header
// says why.
func TestK8sWaitNoPlannedEnd(t *testing.T) {
	p := testPlan(t, 2)
	p.Seconds = 0
	if got := p.K8sWaitSeconds(); got != 24*60*60 {
		t.Errorf("wait %d s for a run with no planned end, want a day", got)
	}
	g := generate(t, p, testOptions())
	if h := g.header; !strings.Contains(h, "no planned end") || !strings.Contains(waitLine(t, h), "+ 86400))") {
		t.Errorf("the header does not bound the wait at a day, saying why:\n%s", h)
	}
	// No deadline on the run's own Jobs: a whole trace may take longer than any guess.
	for _, c := range []string{ComponentCoordinator, ComponentShard} {
		if d := g.job(c).Spec.ActiveDeadlineSeconds; d != nil {
			t.Errorf("%s Job: activeDeadlineSeconds %d for a run with no planned end; want none", c, *d)
		}
	}
}

// TestK8sJobsHaveDeadlines: a Job whose pods never start (an image that cannot be pulled, a pod that
// cannot be scheduled) fails by itself at its deadline, before the printed wait gives up, so the wait
// ends on Failed and the cluster gets its resources back. The merge's deadline counts from its
// resumption and fits inside the merge's wait too.
func TestK8sJobsHaveDeadlines(t *testing.T) {
	p := testPlan(t, 2)
	g := generate(t, p, testOptions())
	deadline := p.K8sDeadlineSeconds()
	if deadline < int64(p.Seconds) || deadline >= p.K8sWaitSeconds() {
		t.Fatalf("deadline %d s for a %v s run, wait %d s: want the run inside the deadline inside the wait", deadline, p.Seconds, p.K8sWaitSeconds())
	}
	for _, c := range []string{ComponentCoordinator, ComponentShard} {
		if d := g.job(c).Spec.ActiveDeadlineSeconds; d == nil || *d != deadline {
			t.Errorf("%s Job: activeDeadlineSeconds %v; want %d", c, d, deadline)
		}
	}
	if d := g.job(ComponentMerge).Spec.ActiveDeadlineSeconds; d == nil || *d <= 0 || *d >= mergeWaitSeconds {
		t.Errorf("merge Job: activeDeadlineSeconds %v; want one inside the merge's wait of %d s", d, mergeWaitSeconds)
	}
	if !strings.Contains(g.header, "fail by themselves "+strconv.FormatInt(deadline, 10)+" s") {
		t.Errorf("the header does not state the Jobs' deadline of %d s:\n%s", deadline, g.header)
	}
}
