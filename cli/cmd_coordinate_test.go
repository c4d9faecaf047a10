package cli

import (
	"strings"
	"testing"
)

func TestCoordinateFlags(t *testing.T) {
	t.Setenv("PLLOAD_TEST_COORD_TOKEN", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no shards", []string{"coordinate"}, "--shards 0; accepted: the number of shards, at least 1"},
		{"negative shards", []string{"coordinate", "--shards", "-2"}, "--shards -2"},
		{"beyond loopback without a token", []string{"coordinate", "--shards", "2", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0 is beyond loopback and requires a shared secret"},
		{"all interfaces without a token", []string{"coordinate", "--shards", "2", "--listen", ":0"}, "--listen :0 is beyond loopback"},
		{"empty token variable", []string{"coordinate", "--shards", "2", "--listen", "0.0.0.0:0", "--token-env", "PLLOAD_TEST_COORD_TOKEN"}, "--token-env PLLOAD_TEST_COORD_TOKEN: the variable is unset or empty"},
		{"zero join timeout", []string{"coordinate", "--shards", "2", "--join-timeout", "0s"}, "--join-timeout 0s; accepted: a positive duration"},
		{"an argument", []string{"coordinate", "--shards", "2", "extra"}, "coordinate takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := plload(t, tc.args...)
			if code != exitBadInput || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, errOut, tc.want)
			}
		})
	}
}

func TestCoordinateMissingShardExit1(t *testing.T) {
	code, _, errOut := plload(t, "coordinate", "--shards", "2", "--listen", "127.0.0.1:0", "--join-timeout", "200ms")
	if code != exitFailed || !strings.Contains(errOut, "shard(s) 0, 1 of 2 did not join within 200ms") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming shards 0 and 1", code, errOut)
	}
}
