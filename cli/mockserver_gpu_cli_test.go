package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Bad GPU figures are refused with exit 2 and the flag named; good ones reach the mock's
// /dcgm/metrics: three GPUs of 50 W each at rest.
func TestMockserverGPUFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "0"}, "--gpus 0: accepted: the devices /dcgm/metrics reports, 1 to"},
		{[]string{"--gpu-idle-watts", "-5"}, "--gpu-idle-watts -5: accepted: watts per GPU"},
		{[]string{"--gpu-joules-per-token", "NaN"}, "--gpu-joules-per-token NaN: accepted: joules per generated token"},
	} {
		// Bounded, and on a free port: were a bad figure let through, the mock would serve until stopped.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errOut syncBuffer
		code := Run(ctx, append([]string{"plload", "mockserver", "--addr", "127.0.0.1:0"}, tc.args...), &out, &errOut)
		cancel()
		if code != 2 || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("mockserver %v: exit %d (want 2), output lacks %q:\n%s%s", tc.args, code, tc.want, out.String(), errOut.String())
		}
	}

	url, _, stop := runMockserver(t, "--gpus", "3", "--gpu-idle-watts", "50", "--gpu-joules-per-token", "0.5")
	resp, err := http.Get(strings.TrimSuffix(url, "/v1") + "/dcgm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, gpu := range []string{`gpu="0"`, `gpu="1"`, `gpu="2"`} {
		if !strings.Contains(string(body), gpu) {
			t.Errorf("/dcgm/metrics lacks GPU %s:\n%s", gpu, body)
		}
	}
	var powers []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "DCGM_FI_DEV_POWER_USAGE{") {
			powers = append(powers, line[strings.LastIndexByte(line, ' ')+1:])
		}
	}
	if strings.Join(powers, " ") != "50 50 50" {
		t.Errorf("want three GPUs at 50 W at rest, got %v:\n%s", powers, body)
	}
	stop()
}
