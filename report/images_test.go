package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestImagesTables: a stage whose requests carried images gets the Images tables — what it sent and
// the server counted, the requests by images (with their request bytes and $/1K turns), and TTFT by
// pixels — and its stage.json matches the schema; a stage without images gets none of them.
func TestImagesTables(t *testing.T) {
	plain := StageTable([]*resultfiles.StageReport{featureStage(t, false, rec(1.5, 100, 10, "a"))})
	if strings.Contains(plain, "Images") {
		t.Fatalf("images tables on a stage without images:\n%s", plain)
	}
	var recs []*metrics.Record
	for k := range 6 {
		r := rec(1.5+float64(k)/2, 100+100*float64(k%3), 10, "a")
		r.ClientPromptTokens, r.RequestBytes = metrics.Some(50), metrics.Some(2048)
		if n := k % 3; n > 0 {
			r.ImageCount, r.ImagePixels, r.ImageBytes = metrics.Some(n), metrics.Some(n*1024*1024), metrics.Some(n*200*1024)
			r.ClientImageTokens, r.RequestBytes = metrics.Some(n*140), metrics.Some(2048+n*273*1024)
		}
		recs = append(recs, r)
	}
	st := featureStage(t, false, recs...)
	text := StageTable([]*resultfiles.StageReport{st})
	for _, want := range []string{
		"Images:", "input tok/s image/text", "150.0/210.0", "60.0 / 60.0", // server: 200 − 50 a request; client 140 an image; text: the rest of the 200, over 10 s
		"Images: by images in the request:", "| 0 | 2 |", "| 1 | 2 |", "| 2+ | 2 |", "| 2.0 |", "| 548.0 |", // request KB
		"Images: by the request's pixels:", "| 0.524–1.05 MP | 2 |", "| 1.05–2.1 MP | 2 |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	im := st.Summary.Images
	if b := im.ByImages; b[2].USDPer1KTurns == nil || *b[2].USDPer1KTurns <= *b[0].USDPer1KTurns {
		t.Errorf("$/1K turns by images: requests with 2 images held the server longer, yet %+v", b)
	}
	_, stageSchema := schemas(t)
	data, _ := json.Marshal(st)
	if err := validate(t, stageSchema, "stage.json with images", data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
}
