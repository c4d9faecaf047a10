package report

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// tableRows returns the Markdown table rows (lines starting with "|") of text, by table.
func markdownTables(text string) [][]string {
	var out [][]string
	var cur []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "|") {
			cur = append(cur, line)
			continue
		}
		if cur != nil {
			out = append(out, cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// TestStageTablesFitALaptop: the stage numbers come in narrow tables (≤ 10 columns, so the cost is on
// screen at 1280 px), each row starting with its stage and load, in the terminal (StageTable),
// report.md and `plload report` (Comparison), whose `| 02 | c=4 |` .ci/run greps.
func TestStageTablesFitALaptop(t *testing.T) {
	sc, r := goldenReport(t)
	_, again := troubledStages(t)
	for name, text := range map[string]string{"StageTable": StageTable(r.Stages), "report.md": Markdown(r, sc),
		"Comparison of one run":  Comparison([]Run{{Name: "golden", Stages: r.Stages}}),
		"Comparison of two runs": Comparison([]Run{{Name: "a", Stages: r.Stages}, {Name: "b", Stages: again}})} {
		tables := markdownTables(text)
		if len(tables) < 3 {
			t.Errorf("%s: %d tables, want throughput, latency and cost apart:\n%s", name, len(tables), text)
		}
		two := strings.HasPrefix(name, "Comparison of two")
		for _, tb := range tables[:3] {
			if cols := strings.Count(tb[0], "|") - 1; cols > 10 {
				t.Errorf("%s: a table of %d columns does not fit a laptop: %s", name, cols, tb[0])
			}
			want := "| 02 | c=4 |"
			if two {
				want = "| b | 02 | c=4 |"
			}
			if !strings.Contains(strings.Join(tb, "\n"), "\n"+want) {
				t.Errorf("%s: no row starting %q in\n%s", name, want, strings.Join(tb, "\n"))
			}
		}
		if !strings.Contains(text, "$/1M out") || !strings.Contains(text, "$138.889") {
			t.Errorf("%s: the cost is missing", name)
		}
	}
	if !strings.Contains(StageTable(r.Stages), "| stage | load | active sess |") {
		t.Error("the terminal table lost its first columns (main_test greps them)")
	}
}

// TestCacheHitIsAPercent: client and server cache hits, in every table, print as percents.
func TestCacheHitIsAPercent(t *testing.T) {
	sc, r := goldenReport(t)
	page, err := HTML([]Run{{Name: "golden", Stages: r.Stages}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"report.md": Markdown(r, sc), "terminal": StageTable(r.Stages), "report.html": string(page)} {
		if strings.Contains(text, "0.610") || strings.Contains(text, "0.640") {
			t.Errorf("%s shows a cache hit as a fraction", name)
		}
		if !strings.Contains(text, "64.0%") {
			t.Errorf("%s lacks the client cache hit 64.0%%", name)
		}
		if name != "terminal" && !strings.Contains(text, "61.0% (client 60.5% same span; 64.0% window)") {
			t.Errorf("%s lacks the server cache hit 61.0%%", name)
		}
	}
}

// TestReportShowsRetriesOutagesAndScrapes: what the engine and the scraper counted is in report.md
// and report.html, and the outage's message is shown verbatim but inert.
func TestReportShowsRetriesOutagesAndScrapes(t *testing.T) {
	sc, r := goldenReport(t)
	page, err := HTML([]Run{{Name: "golden", Stages: r.Stages}}, "plload test", "")
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(r, sc)
	for _, want := range []string{"## Retries and outages", "stage 02: 3 requests were sent a second time", "stage 02: stopped early: target unreachable since",
		"| 02 | 2026-11-29T12:00:05.000Z | 2026-11-29T12:00:09.500Z | refused | 412 |", "stage 01: server metrics: 10 of 12 scrapes ok"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	html := string(page)
	for _, want := range []string{"<h2>Retries and outages</h2>", "3 requests were sent a second time", "<td>412</td>", "server metrics: 10 of 12 scrapes ok",
		"connection refused | [docs](http://evil.example/)", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// With nothing to say, the section is not there.
	_, calm := goldenStages(t)
	if md := Markdown(resultfiles.New(sc, calm, resultfiles.Meta{}), sc); strings.Contains(md, "Retries and outages") || strings.Contains(md, "scrapes ok") {
		t.Errorf("a calm run has a retries section:\n%s", md)
	}
}

// TestHTMLRendersMarkdown: Method, Workload and every section of report.md are HTML in report.html
// (headings, lists, tables, code), not Markdown in a <pre>; the Server view and Injector health are
// there; outside text in it cannot link, fetch or run anything.
func TestHTMLRendersMarkdown(t *testing.T) {
	sc, r := goldenReport(t)
	page, err := HTML([]Run{{Name: "golden", Stages: r.Stages}}, "plload test",
		methodSection(r, sc)+"\n- a model named [m](http://evil.example/) ![i](http://evil.example/i.png) <img src=x> <b>bold</b>\n\n<div>block</div>\n")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"<h2>Method</h2>", "<h2>Workload</h2>", "<h2>Configuration</h2>", "<h2>Server view</h2>", "<h2>Injector health</h2>",
		"<h2>Warnings</h2>", "<h2>Errors by kind</h2>", "<li>Tool: plload test", "<code>max_completion_tokens</code>", "<th>client CPU</th>",
		"<td>vLLM (10 scrapes)</td>", "<pre><code class=\"language-sh\">plload run /abs/golden.yaml", "a model named m i &lt;img src=x&gt; &lt;b&gt;bold&lt;/b&gt;",
		"&lt;div&gt;block&lt;/div&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, raw := range []string{"## Method", "- Tool:", "| --- |", "**Headline**", `<pre style`} {
		if strings.Contains(html, raw) {
			t.Errorf("report.html shows raw Markdown %q", raw)
		}
	}
	for _, banned := range []string{"<script", `src="`, "href=", "<img", "@import", "url("} {
		if strings.Contains(html, banned) {
			t.Errorf("report.html must fetch and run nothing, found %q", banned)
		}
	}
}

// TestOutputLengthSaysWhatWasSent: the Configuration line reflects extra_body's ignore_eos and
// min_tokens, not a fixed "no ignore_eos is sent".
func TestOutputLengthSaysWhatWasSent(t *testing.T) {
	cases := []struct {
		name  string
		extra map[string]any
		want  []string
		not   []string
	}{
		{"nothing", nil, []string{"no ignore_eos is sent, so the server may stop earlier"}, []string{"min_tokens"}},
		{"ignore_eos true", map[string]any{"ignore_eos": true}, []string{"extra_body sends `\"ignore_eos\": true`", "runs to that cap"}, []string{"no ignore_eos", "may stop earlier"}},
		{"ignore_eos false", map[string]any{"ignore_eos": false}, []string{"`\"ignore_eos\": false`", "may stop earlier"}, []string{"no ignore_eos"}},
		{"min_tokens", map[string]any{"min_tokens": uint64(16)}, []string{"no ignore_eos is sent", "`\"min_tokens\": 16`, so not before that many tokens"}, nil},
		{"both", map[string]any{"ignore_eos": true, "min_tokens": 8}, []string{"`\"ignore_eos\": true`", "`\"min_tokens\": 8`"}, []string{"no ignore_eos"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, _ := goldenStages(t)
			sc.Target.ExtraBody = tc.extra
			line := outputLengthLine(sc)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("lacks %q: %s", w, line)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(line, n) {
					t.Errorf("says %q: %s", n, line)
				}
			}
		})
	}
}

// TestReportJSONPlain: report.json's headline is plain text; absent values are null, lists [].
func TestReportJSONPlain(t *testing.T) {
	_, r := goldenReport(t)
	data, _ := json.Marshal(r)
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if h := back["headline"].(string); strings.Contains(h, "*") || !strings.HasPrefix(h, "stage 01: $138.889/1M out") {
		t.Errorf("headline %q: want plain text", h)
	}
	if back["headline_stage"] != 1.0 {
		t.Errorf("headline_stage %v", back["headline_stage"])
	}
	if regexp.MustCompile(`:-1[,}]`).Match(data) {
		t.Errorf("report.json has a −1: %s", data)
	}
	sc, _ := goldenStages(t)
	empty, _ := json.Marshal(resultfiles.New(sc, nil, resultfiles.Meta{}))
	for _, want := range []string{`"stages":[]`, `"headline_stage":null`} {
		if !strings.Contains(string(empty), want) {
			t.Errorf("report.json of no stages lacks %s: %s", want, empty)
		}
	}
}

// TestNoSLONoPrice: a stage judged without limits or priced without a price says N/A (not set / no
// price), never FAIL and never $0.
func TestNoSLONoPrice(t *testing.T) {
	_, stages := goldenStages(t)
	st := stages[0]
	in := metrics.StageInput{NeverStarted: -1, SLO: metrics.SLOLimits{ErrorRateUnset: true}, Cost: metrics.CostInputs{GPUCount: 1, ExpectedTurns: 1, Unpriced: true},
		T0Ns: metrics.Some(t0), Warmup: time.Second, Duration: 10 * time.Second}
	s := metrics.NewStage(in)
	s.Add(rec(1.5, 100, 10, "a"))
	st.SLO, st.Cost, st.Summary = in.SLO, resultfiles.CostInputs{CostInputs: in.Cost}, s.Summary()
	one := []*resultfiles.StageReport{st}
	text := resultfiles.HeadlineLine(one) + "\n" + StageTable(one)
	for _, want := range []string{"no SLO was set", "N/A (not set)", "N/A (no price)"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"FAIL", "$0.0"} {
		if strings.Contains(text, bad) {
			t.Errorf("says %q:\n%s", bad, text)
		}
	}
	// SLO set and passed, no price: the headline names the stage and says why there is no cost.
	in.SLO = metrics.SLOLimits{TTFTP95Ms: 500, ErrorRateUnset: true}
	s = metrics.NewStage(in)
	s.Add(rec(1.5, 100, 10, "a"))
	st.SLO, st.Summary = in.SLO, s.Summary()
	if h := resultfiles.HeadlineText(one); h != "stage 01: out tok/s 1.0, SLO PASS; no GPU price was given, so costs are N/A" {
		t.Errorf("headline %q", h)
	}
}
