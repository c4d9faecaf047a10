// Package metrics holds the per-request record (AIPerf's profile_export.jsonl layout), its writer and
// reader, and the arithmetic that turns records into a stage's numbers. Its files, by part:
//
//   - the record and its files: record.go (Record, Opt), record_json.go (one line, written by hand),
//     record_read.go and record_read_parallel.go (plload's and AIPerf's layouts), record_file.go
//     (the JSON-lines writer goroutine, atomic files), record_session.go (sessions.jsonl),
//     record_failure.go (what kind of failure a record is);
//   - the window, summary, SLO and cost: stage.go (Stage: the records of one stage, counted),
//     stage_window.go (t0), stage_levels.go (open sessions and requests over time),
//     stage_summary.go (StageSummary and its computation), stage_features.go (tool calls and rounds,
//     structured output, a batch job: docs/scenario.md), stage_file.go (a records file's summary),
//     stage_series.go (the per-second view for charts), dist.go (distributions, percentiles), slo.go
//     (limits, verdict, goodput's per-request test), cost.go (prices, the headline), bootstrap.go
//     (confidence intervals of comparisons);
//   - the server's view: server_sample.go (one scrape, as server_metrics.jsonl holds it) and
//     server_summary.go (a stage's window of them); reading the endpoint is package scrape's;
//   - the GPUs' view: gpu_sample.go (one reading of a telemetry source, as gpu_metrics.jsonl holds
//     it), gpu_summary.go and gpu_series.go (a stage's window: energy, power, J per token),
//     gpu_work.go (the work done in a window, each token at its arrival), aiperf_gpu.go (AIPerf's
//     GPU telemetry layout, written and read);
//   - the injector's health: injector_health.go.
//
// Beyond the tags of AIPerf's layout (docs/records.md), plload writes metrics of its own, which AIPerf's readers skip:
// output_char_count (unit "chars"), the Unicode characters of the streamed content, reasoning and
// tool-call text included — output per second that needs no tokenizer to compare two servers; and
// in agent sessions tool_call_count and tool_call_invalid_arguments (unit "calls") and
// time_to_first_tool_call (unit "ms").
package metrics
