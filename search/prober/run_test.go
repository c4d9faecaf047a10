package prober

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/search"
)

// jsonKeys lists the JSON keys of a struct type's fields, in order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		keys = append(keys, f.Tag.Get("json"))
	}
	return keys
}

// TestSearchJSONKeepsEveryProbeKey: search.json's probes (resultfiles.SearchProbe, which writeResults
// copies from the search's probes) carry every key of search.Probe, so a field the search adds to
// its probes cannot silently go missing from search.json.
func TestSearchJSONKeepsEveryProbeKey(t *testing.T) {
	if diff := cmp.Diff(jsonKeys(reflect.TypeFor[search.Probe]()), jsonKeys(reflect.TypeFor[resultfiles.SearchProbe]())); diff != "" {
		t.Errorf("search.Probe's keys (-) against search.json's probe (+):\n%s", diff)
	}
}
