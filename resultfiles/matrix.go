package resultfiles

// MatrixChartLine is the line of a run matrix's report.md (written by package matrix) that shows its
// latency–throughput chart; the renderer's report.html draws the chart itself in its place.
const MatrixChartLine = "![latency and throughput of parts A and B](charts/matrix_curve.png)"
