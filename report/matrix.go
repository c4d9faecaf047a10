package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// matrixPage is the matrix's report.html: report.md rendered (see markdownHTML: nothing fetched, no
// scripts), with the chart inline where report.md has resultfiles.MatrixChartLine.
var matrixPage = template.Must(template.New("matrix").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:78rem;padding:0 1rem;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{font-size:1.05rem}
.chart svg{width:100%;height:auto}
table{border-collapse:collapse;font-size:.82rem;margin:.3rem 0 1rem;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.3rem .45rem;text-align:right;white-space:nowrap}th{background:#f6f6f6}
td:first-child,th:first-child{text-align:left}
code{font-size:.85em;background:#f6f6f6;padding:0 .2em}pre{background:#f6f6f6;padding:.6rem;overflow-x:auto}
ul{padding-left:1.2rem}@media print{body{margin:0;max-width:none}.chart{break-inside:avoid}table{display:table}}
</style></head><body>
{{.Before}}
{{if .Chart}}<div class="chart">{{.Chart}}</div>{{end}}
{{.After}}
</body></html>
`))

// WriteMatrixReport writes the run matrix's report into dir: report.md as given, charts/matrix_curve.svg
// and .png (the latency–throughput curves of runs, overlaid, with their SLO lines; none when no run
// has a stage) and report.html, the same text with the chart inline.
func WriteMatrixReport(dir, md string, runs []Run) error {
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(md)); err != nil {
		return err
	}
	var svg []byte
	if hasStages(runs) {
		if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
			return err
		}
		m := Curve(runs)
		for _, format := range []string{"svg", "png"} {
			data, err := m.Render(format)
			if err != nil {
				return fmt.Errorf("matrix chart: %w", err)
			}
			if format == "svg" {
				svg = data
			}
			if err := metrics.WriteFileAtomic(filepath.Join(dir, "charts", "matrix_curve."+format), data); err != nil {
				return err
			}
		}
	}
	before, after, _ := strings.Cut(md, resultfiles.MatrixChartLine)
	var d struct {
		Title         string
		Before, After template.HTML
		Chart         template.HTML
	}
	d.Title, _, _ = strings.Cut(strings.TrimPrefix(md, "# "), "\n")
	var err error
	if d.Before, err = mdToHTML(before); err == nil {
		d.After, err = mdToHTML(after)
	}
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	if svg != nil {
		d.Chart = inlineSVG(svg)
	}
	var page bytes.Buffer
	if err := matrixPage.Execute(&page, d); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "report.html"), page.Bytes())
}

func hasStages(runs []Run) bool {
	for _, r := range runs {
		if len(r.Stages) > 0 {
			return true
		}
	}
	return false
}
