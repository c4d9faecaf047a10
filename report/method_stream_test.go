package report

import (
	"strings"
	"testing"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// TestMethodSaysHowAnswersWereRead: report.md's Method says "streaming SSE; every chunk is
// timestamped" only for a streamed run; a target.stream: false run read whole answers, had no
// chunks, and says so.
func TestMethodSaysHowAnswersWereRead(t *testing.T) {
	const streamed = "streaming SSE; every chunk is timestamped"
	const whole = "non-streamed whole answers (target.stream: false); each answer's end is timestamped"
	for _, tc := range []struct {
		name, stream string
		want, not    string
	}{
		{"default", "", streamed, whole},
		{"stream true", ", stream: true", streamed, whole},
		{"stream false", ", stream: false", whole, streamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := `name: method
seed: 3
target: {base_url: "http://127.0.0.1:8000/v1", model: m` + tc.stream + `}
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
  mode: concurrency
  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]
slo: {e2e: {p95: 10s}}
cost: {gpu_hourly_usd: 2}
`
			sc, issues := workload.Parse("method.yaml", []byte(text), workload.LoadOptions{Getenv: func(string) string { return "" }})
			if err := issues.Err(); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			md := Markdown(resultfiles.New(sc, []*resultfiles.StageReport{stageOf(t, sc, 0)}, resultfiles.Meta{}), sc)
			_, method, _ := strings.Cut(md, "## Method")
			if !strings.Contains(method, tc.want) || strings.Contains(method, tc.not) {
				t.Errorf("Method wants %q and not %q:\n%s", tc.want, tc.not, method)
			}
		})
	}
}
