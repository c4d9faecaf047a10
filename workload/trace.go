package workload

import "fmt"

// readTrace reads a trace file (SPEC §12) into a Source. The trace readers (mooncake, azure,
// burstgpt, qwen_bailian) are being written beside this file; until they land, a scenario naming a
// trace is refused at validate with this message, before any traffic.
func (s *Scenario) readTrace(path string, spec *TraceSpec) (*Source, error) {
	return nil, fmt.Errorf("%s: reading %s traces is not in this build yet; accepted today: workload.dataset (prompts, openai, sharegpt, aiperf)", path, spec.Format)
}
