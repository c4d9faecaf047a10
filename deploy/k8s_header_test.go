package deploy

import (
	"strings"
	"testing"
)

// TestK8sHeaderNamespaceAndPodSecurity: with --namespace the header says how to create the
// namespace before a server-side dry run (which creates nothing, so every object in it is refused);
// with --results-init it says that Pod Security "restricted" refuses the init container, so no
// shard pod is ever made. Neither line without its flag. TestK8sManifestsPassAPIServer runs the
// first command and checks the second claim against a real API server.
func TestK8sHeaderNamespaceAndPodSecurity(t *testing.T) {
	p := testPlan(t, 2)
	nsLine := "kubectl create namespace bench --dry-run=client -o yaml | kubectl apply -f -"
	psaLine := `Pod Security "restricted" refuses its init container (root, CHOWN, DAC_OVERRIDE)`
	for _, c := range []struct {
		ns, init      string
		wantNS, wantP bool
	}{
		{"", "", false, false},
		{"bench", "", true, false},
		{"", "busybox:1.36", false, true},
		{"bench", "busybox:1.36", true, true},
	} {
		o := testOptions()
		o.Namespace, o.ResultsInit = c.ns, c.init
		h := generate(t, p, o).header
		if got := strings.Contains(h, "--dry-run=server needs it to exist first: "+nsLine); got != c.wantNS {
			t.Errorf("namespace %q: the dry-run namespace line present %v, want %v:\n%s", c.ns, got, c.wantNS, h)
		}
		if got := strings.Contains(h, psaLine) && strings.Contains(h, `use "baseline"`); got != c.wantP {
			t.Errorf("results-init %q: the Pod Security line present %v, want %v:\n%s", c.init, got, c.wantP, h)
		}
		if c.ns != "" && !strings.Contains(h, "# This stream creates the namespace bench first") {
			t.Errorf("the header does not say the stream creates the namespace:\n%s", h)
		}
	}
}
