package runner

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/plload/plload/workload"
)

// TestRoomEstimateCountsAnswersAtAFloor: an open-loop hour at max_output_tokens 4096 is estimated
// with answers of at most refuseTokens, so a disk with room for the run's real answers is not
// refused before it starts.
// Catches: every answer counted at its max_output_tokens (81 KiB a record: 3.4 GiB for an hour at
// 10 requests/s whose ~300-token answers wrote a tenth of that).
func TestRoomEstimateCountsAnswersAtAFloor(t *testing.T) {
	text := "name: r\nseed: 1\ntarget: {base_url: http://127.0.0.1:1/v1, model: m}\n" +
		"personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}\n" +
		"session: {turns: {min: 1, max: 1}, user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 4096, max: 4096}, think_time: {min: 0s, max: 0s}}\n" +
		"load: {mode: request_rate, stages: [{rate: 10, warmup: 0s, duration: 1h}]}\n"
	sc, issues := workload.Parse("r.yaml", []byte(text), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if len(issues.Errors()) > 0 {
		t.Fatal(issues.Errors())
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	need, requests, perRecord := expectedBytes(sc, w)
	if perRecord != recordBaseBytes+recordTokenBytes*refuseTokens {
		t.Errorf("a record is estimated at %d bytes; want %d (answers at %d tokens at most)", perRecord, recordBaseBytes+recordTokenBytes*refuseTokens, refuseTokens)
	}
	if requests < 35000 || requests > 37000 || need > 1<<30 {
		t.Errorf("an hour at 10/s: %.0f requests, %s; want about 36000 and under 1 GiB", requests, sizeText(need))
	}
}

// TestPermissionRefusalNamesUserAndVolume: a results directory refused for permission names the uid
// plload runs as and, in a pod whose manifest said so, the claim that holds it.
func TestPermissionRefusalNamesUserAndVolume(t *testing.T) {
	t.Setenv(workload.ResultsVolumeEnv, "the PersistentVolumeClaim results (mounted at /results)")
	err := &os.PathError{Op: "mkdir", Path: "/results/load-r1", Err: fs.ErrPermission}
	got := whoCannotWrite(err)
	for _, want := range []string{fmt.Sprintf("uid %d", os.Geteuid()), "PersistentVolumeClaim results", "writable by that uid"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := whoCannotWrite(&os.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOTDIR}); got != "" {
		t.Errorf("a non-permission error: %q, want nothing added", got)
	}
}
