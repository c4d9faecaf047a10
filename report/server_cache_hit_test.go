package report

import (
	"testing"

	"github.com/plload/plload/metrics"
)

// TestServerCacheHitSameSpan: the server view sets the server's cache hit beside the client's over the
// same requests (those whose first token came between the scrapes its counters were read at), then the
// client's over the window; without a same-span figure (a server without counters, an older
// stage.json) the window figure stands alone, as it did.
func TestServerCacheHitSameSpan(t *testing.T) {
	sum := &metrics.StageSummary{CacheHit: metrics.Some(0.775)}
	for _, tc := range []struct {
		name string
		sv   metrics.ServerSummary
		want string
	}{
		{"same span known", metrics.ServerSummary{CacheHitRate: metrics.Some(0.855), ClientCacheHit: metrics.Some(0.8546)},
			"85.5% (client 85.5% same span; 77.5% window)"},
		{"no same span", metrics.ServerSummary{CacheHitRate: metrics.Some(0.855)}, "85.5% (client 77.5%)"},
		{"no server figure", metrics.ServerSummary{}, "N/A (client 77.5%)"},
	} {
		if got := serverCacheHit(&tc.sv, sum); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
