package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AIPerfGPUTelemetryFile is the name AIPerf gives its GPU telemetry file in the artifact directory:
// one JSON line per GPU per scrape.
const AIPerfGPUTelemetryFile = "gpu_telemetry_export.jsonl"

// The two generations of AIPerf's GPU telemetry names. The line's shape is the same; the source's key
// and the metric names differ. Reading takes both, line by line, as AIPerf's own reader does.
const (
	// AIPerfGPULayoutPlain is the names AIPerf's GPU telemetry was released with: the source under
	// dcgm_url and metric names without a vendor (gpu_power_usage, energy_consumption, …).
	AIPerfGPULayoutPlain = "plain"
	// AIPerfGPULayoutVendor is AIPerf's main branch (summary schema 1.5): the source under
	// telemetry_source_url, a platform per GPU, and vendor-scoped names (nvidia_power_usage, …).
	AIPerfGPULayoutVendor = "vendor"
)

const aiperfGPULayoutsAccepted = `"plain" (dcgm_url, gpu_power_usage, …) or "vendor" (telemetry_source_url, platform, nvidia_power_usage, …)`

// AIPerf's stand-ins when the driver does not name a GPU (its NVML collector's): read back as unknown.
const (
	aiperfUnknownModel      = "Unknown GPU"
	aiperfUnknownUUIDPrefix = "GPU-unknown-"
)

// Unit conversions between plload's readings and AIPerf's, as AIPerf's DCGM collector scales.
const (
	mJPerMJ        = 1e9         // plload's energy counter is in millijoules, AIPerf's in megajoules
	gbPerMiB       = 1.048576e-3 // AIPerf's memory is in decimal gigabytes
	mbPerMiB       = 1.048576    // the vendor names' framebuffer fields are in decimal megabytes
	pctPerSMActive = 100         // SM activity is a 0–1 ratio in plload, a percentage in AIPerf
)

// aiperfGPUField is one GPUReading value under AIPerf's name in one layout, and how to convert it.
type aiperfGPUField struct {
	plain, vendor string
	unit          string // AIPerf's unit, as its summary writes it (its default set's; see summarized)
	// AIPerf's value = plload's × scale, under the plain name and under the vendor name (the custom
	// framebuffer fields are AIPerf's raw MiB under the plain names, megabytes under the vendor ones).
	plainScale, vendorScale float64
	counter                 bool // cumulative: the summary gives its growth over the window
	summarized              bool // in AIPerf's default metric set (the rest are its custom-metric names)
	get                     func(*GPUReading) **float64
}

// aiperfGPUFields lists the readings plload has, in AIPerf's order. Framebuffer free and total and the
// SM clock are not in AIPerf's default set: AIPerf writes them, under these names, when a custom
// metrics CSV asks; plload writes them so that its own file reads back whole.
var aiperfGPUFields = []aiperfGPUField{
	{"gpu_power_usage", "nvidia_power_usage", "W", 1, 1, false, true, func(g *GPUReading) **float64 { return &g.PowerW }},
	{"energy_consumption", "nvidia_energy_consumption", "MJ", 1 / mJPerMJ, 1 / mJPerMJ, true, true, func(g *GPUReading) **float64 { return &g.EnergyMJ }},
	{"gpu_utilization", "nvidia_gpu_utilization", "%", 1, 1, false, true, func(g *GPUReading) **float64 { return &g.UtilPct }},
	{"gpu_memory_used", "nvidia_memory_used", "GB", gbPerMiB, gbPerMiB, false, true, func(g *GPUReading) **float64 { return &g.MemUsedMiB }},
	{"gpu_temperature", "nvidia_temperature", "°C", 1, 1, false, true, func(g *GPUReading) **float64 { return &g.TempC }},
	{"sm_utilization", "nvidia_sm_utilization", "%", pctPerSMActive, pctPerSMActive, false, true, func(g *GPUReading) **float64 { return &g.SMActive }},
	{"fb_free", "nvidia_fb_free", "", 1, mbPerMiB, false, false, func(g *GPUReading) **float64 { return &g.MemFreeMiB }},
	{"fb_total", "nvidia_fb_total", "", 1, mbPerMiB, false, false, func(g *GPUReading) **float64 { return &g.MemTotalMiB }},
	{"sm_clock", "nvidia_sm_clock", "MHz", 1, 1, false, false, func(g *GPUReading) **float64 { return &g.SMClockMHz }},
}

// name is the field's key in a layout.
func (f aiperfGPUField) name(layout string) string {
	if layout == AIPerfGPULayoutVendor {
		return f.vendor
	}
	return f.plain
}

// toAIPerf converts plload's value to AIPerf's unit in a layout.
func (f aiperfGPUField) toAIPerf(v float64, layout string) float64 {
	if layout == AIPerfGPULayoutVendor {
		return v * f.vendorScale
	}
	return v * f.plainScale
}

// fromAIPerf is toAIPerf's inverse; a vendor name is in the vendor's units whatever the line's source key.
func (f aiperfGPUField) fromAIPerf(v float64, vendorName bool) float64 {
	if vendorName {
		return v / f.vendorScale
	}
	return v / f.plainScale
}

// aiperfAMDFields maps AIPerf's AMD names onto readings measuring the same quantity in the same unit
// (power, energy, memory, temperature). AMD's activity counters are left out: AIPerf itself says they
// do not measure what NVIDIA's utilisation does.
var aiperfAMDFields = []struct {
	name  string
	field int // in aiperfGPUFields
}{{"amd_power", 0}, {"amd_energy_consumption", 1}, {"amd_memory_used", 3}, {"amd_temperature", 4}}

func checkAIPerfGPULayout(layout string) error {
	if layout != AIPerfGPULayoutPlain && layout != AIPerfGPULayoutVendor {
		return fmt.Errorf("AIPerf GPU telemetry layout %q: accepted are %s", layout, aiperfGPULayoutsAccepted)
	}
	return nil
}

// aiperfGPUIdentity is how a GPU is named in AIPerf's files: gpu_index is a number, and gpu_uuid and
// gpu_model_name are always written (AIPerf's own stand-ins where the reading has none).
func aiperfGPUIdentity(g GPUReading) (index int, uuid, model string, err error) {
	index, err = strconv.Atoi(g.GPU)
	if err != nil || index < 0 {
		return 0, "", "", fmt.Errorf("GPU %q is not a device index (AIPerf's gpu_index is a number such as 0)", g.GPU)
	}
	uuid, model = g.UUID, g.Model
	if uuid == "" {
		uuid = aiperfUnknownUUIDPrefix + strconv.Itoa(index)
	}
	if model == "" {
		model = aiperfUnknownModel
	}
	return index, uuid, model, nil
}

// WriteAIPerfGPUTelemetry writes a stage's GPU samples as AIPerf's gpu_telemetry_export.jsonl in the
// given layout: one line per GPU per sample, in the samples' order, with AIPerf's keys and units
// (energy in MJ, memory in GB, SM activity in %). A value the reading lacks is left out, as AIPerf
// leaves out what its collector did not get. The source is written as plload read it (the
// exporter's URL, or "nvidia-smi").
func WriteAIPerfGPUTelemetry(w io.Writer, samples []GPUSample, layout string) error {
	if err := checkAIPerfGPULayout(layout); err != nil {
		return err
	}
	var buf []byte
	for i, s := range samples {
		for _, g := range s.GPUs {
			line, err := appendAIPerfGPULine(buf[:0], s, g, layout)
			if err != nil {
				return fmt.Errorf("GPU sample %d (t_ns %d, source %s): %w", i+1, s.TNs, s.Source, err)
			}
			buf = append(line, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendAIPerfGPULine writes one line, its keys in the order AIPerf's record declares them.
func appendAIPerfGPULine(b []byte, s GPUSample, g GPUReading, layout string) ([]byte, error) {
	index, uuid, model, err := aiperfGPUIdentity(g)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"gpu_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = appendStringField(b, "gpu_uuid", uuid)
	b = appendStringField(b, "gpu_model_name", model)
	if g.Host != "" {
		b = appendStringField(b, "hostname", g.Host)
	}
	sourceKey := "dcgm_url"
	if layout == AIPerfGPULayoutVendor {
		// plload reads NVIDIA's exporters and nvidia-smi only.
		b = appendStringField(b, "platform", "nvidia")
		sourceKey = "telemetry_source_url"
	}
	b = appendIntField(b, "timestamp_ns", s.TNs)
	b = appendStringField(b, sourceKey, s.Source)
	b = append(b, `,"telemetry_data":{`...)
	first := true
	for _, f := range aiperfGPUFields {
		p := *f.get(&g)
		// A NaN or infinite value is absent in AIPerf's files (and not JSON).
		if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, f.name(layout)...)
		b = append(b, '"', ':')
		b = appendFloat(b, f.toAIPerf(*p, layout))
	}
	return append(b, "}}"...), nil
}

// aiperfGPULine is what plload reads of one line of AIPerf's GPU telemetry file.
type aiperfGPULine struct {
	GPUIndex           *json.Number               `json:"gpu_index"`
	GPUUUID            *string                    `json:"gpu_uuid"`
	GPUModelName       *string                    `json:"gpu_model_name"`
	Hostname           *string                    `json:"hostname"`
	TimestampNs        *json.Number               `json:"timestamp_ns"`
	DCGMURL            *string                    `json:"dcgm_url"`
	TelemetrySourceURL *string                    `json:"telemetry_source_url"`
	TelemetryData      map[string]json.RawMessage `json:"telemetry_data"`
	// keys of other files, to say what a wrong file is
	PlloadTNs *json.RawMessage `json:"t_ns"`
	Metadata  *json.RawMessage `json:"metadata"`
}

const aiperfGPUAccepted = "AIPerf's GPU telemetry file (gpu_telemetry_export.jsonl) has one JSON object per line with " +
	"gpu_index, gpu_uuid, timestamp_ns, dcgm_url (or telemetry_source_url) and telemetry_data"

// ReadAIPerfGPUTelemetry reads AIPerf's gpu_telemetry_export.jsonl, in either layout (line by line),
// into plload's samples: the lines of one scrape (one timestamp, one source) become one sample, the
// samples in time order. Values come back in plload's units (energy in mJ, memory in MiB, SM
// activity 0–1); AIPerf's metrics plload has no reading for (memory bandwidth, encoder, XID, …) are
// left out, and a null value is absent. Errors name the line.
func ReadAIPerfGPUTelemetry(r io.Reader) ([]GPUSample, error) {
	type scrape struct {
		t      int64
		source string
	}
	var out []GPUSample
	at := map[scrape]int{} // index in out
	seen := map[scrape]map[string]int{}
	err := eachRecordLine(r, func(line int, text []byte) error {
		t, source, g, err := parseAIPerfGPULine(text)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		k := scrape{t, source}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			seen[k] = map[string]int{}
			out = append(out, GPUSample{TNs: t, Source: source})
		}
		if prev, dup := seen[k][g.Key()]; dup {
			return fmt.Errorf("line %d: GPU %s of %s at timestamp_ns %d again (first on line %d): one scrape reads each GPU once", line, g.Key(), source, t, prev)
		}
		seen[k][g.Key()] = line
		out[i].GPUs = append(out[i].GPUs, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TNs < out[j].TNs })
	return out, nil
}

// parseAIPerfGPULine reads one line: its scrape's time and source, and the GPU's reading.
func parseAIPerfGPULine(text []byte) (int64, string, GPUReading, error) {
	var l aiperfGPULine
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&l); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ) && typ.Field != "":
			return 0, "", GPUReading{}, fmt.Errorf("%s is a JSON %s, not what AIPerf writes there; %s", typ.Field, typ.Value, aiperfGPUAccepted)
		case text[0] == '{' && json.Valid(text): // an object, with a value of some other kind
			return 0, "", GPUReading{}, fmt.Errorf("a value AIPerf does not write: %v; %s", err, aiperfGPUAccepted)
		}
		return 0, "", GPUReading{}, fmt.Errorf("not a JSON object: %s; %s", jsonProblem(text, err), aiperfGPUAccepted)
	}
	switch {
	case l.TimestampNs == nil && l.PlloadTNs != nil:
		return 0, "", GPUReading{}, fmt.Errorf("this is plload's own gpu_metrics.jsonl (t_ns, source, gpus), not AIPerf's; %s", aiperfGPUAccepted)
	case l.TimestampNs == nil && l.Metadata != nil:
		return 0, "", GPUReading{}, fmt.Errorf("this is a records file (metadata, metrics), not GPU telemetry; %s", aiperfGPUAccepted)
	case l.TimestampNs == nil:
		return 0, "", GPUReading{}, fmt.Errorf("no timestamp_ns; %s", aiperfGPUAccepted)
	}
	t, err := l.TimestampNs.Int64()
	if err != nil {
		return 0, "", GPUReading{}, fmt.Errorf("timestamp_ns %s is not an integer of nanoseconds", l.TimestampNs)
	}
	var source string
	switch {
	case l.TelemetrySourceURL != nil:
		source = *l.TelemetrySourceURL
	case l.DCGMURL != nil:
		source = *l.DCGMURL
	default:
		return 0, "", GPUReading{}, fmt.Errorf("no source: neither dcgm_url nor telemetry_source_url; %s", aiperfGPUAccepted)
	}
	if l.GPUIndex == nil {
		return 0, "", GPUReading{}, fmt.Errorf("no gpu_index; %s", aiperfGPUAccepted)
	}
	index, err := l.GPUIndex.Int64()
	if err != nil || index < 0 {
		return 0, "", GPUReading{}, fmt.Errorf("gpu_index %s is not a device index (0, 1, …)", l.GPUIndex)
	}
	if l.TelemetryData == nil {
		return 0, "", GPUReading{}, fmt.Errorf("no telemetry_data object; %s", aiperfGPUAccepted)
	}
	g := GPUReading{GPU: strconv.FormatInt(index, 10)}
	if l.GPUUUID != nil && *l.GPUUUID != aiperfUnknownUUIDPrefix+g.GPU {
		g.UUID = *l.GPUUUID
	}
	if l.GPUModelName != nil && *l.GPUModelName != aiperfUnknownModel {
		g.Model = *l.GPUModelName
	}
	if l.Hostname != nil {
		g.Host = *l.Hostname
	}
	if err := readAIPerfGPUValues(&g, l.TelemetryData); err != nil {
		return 0, "", GPUReading{}, err
	}
	return t, source, g, nil
}

// readAIPerfGPUValues fills the reading from telemetry_data. Where a line carries a quantity under two
// names (a vendor name and the plain one), the vendor name, AIPerf's current one, is taken.
func readAIPerfGPUValues(g *GPUReading, data map[string]json.RawMessage) error {
	// set reads one name into the field, unless the field has its value from an earlier name.
	set := func(f aiperfGPUField, name string, vendorName bool) error {
		raw, ok := data[name]
		if !ok || string(raw) == "null" || *f.get(g) != nil {
			return nil
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("telemetry_data.%s: %s is not a number", name, raw)
		}
		x := f.fromAIPerf(v, vendorName)
		if math.IsInf(x, 0) {
			return fmt.Errorf("telemetry_data.%s: %s is beyond any reading", name, raw)
		}
		*f.get(g) = &x
		return nil
	}
	for _, f := range aiperfGPUFields {
		if err := set(f, f.vendor, true); err != nil {
			return err
		}
		if err := set(f, f.plain, false); err != nil {
			return err
		}
	}
	for _, a := range aiperfAMDFields {
		if err := set(aiperfGPUFields[a.field], a.name, true); err != nil {
			return err
		}
	}
	return nil
}

// AIPerfGPUWindow is the span AIPerf's summary measures: a gauge over the readings taken at StartNs
// through EndNs (both included), a counter's growth from the last reading before StartNs (or, with
// none, the first in the span) to the last in it.
type AIPerfGPUWindow struct {
	StartNs, EndNs int64
}

// AIPerfTelemetryData is the telemetry_data section of AIPerf's profile_export_aiperf.json: the
// sources, and per source and GPU the statistics of each metric.
type AIPerfTelemetryData struct {
	Summary AIPerfTelemetrySummary `json:"summary"`
	// Endpoints is keyed by the source as AIPerf shows it (scheme and a trailing /metrics dropped:
	// "localhost:9401").
	Endpoints map[string]AIPerfGPUEndpoint `json:"endpoints"`
}

// AIPerfTelemetrySummary names the sources and the span. AIPerf writes its times as local time with
// no zone, to the microsecond (Python's isoformat).
type AIPerfTelemetrySummary struct {
	EndpointsConfigured []string `json:"endpoints_configured"`
	EndpointsSuccessful []string `json:"endpoints_successful"`
	StartTime           string   `json:"start_time"`
	EndTime             string   `json:"end_time"`
}

// AIPerfGPUEndpoint is one source's GPUs, keyed "gpu_<index>".
type AIPerfGPUEndpoint struct {
	GPUs map[string]AIPerfGPUSummary `json:"gpus"`
}

// AIPerfGPUSummary is one GPU: its identity and its metrics under the layout's names.
type AIPerfGPUSummary struct {
	GPUIndex int                      `json:"gpu_index"`
	GPUName  string                   `json:"gpu_name"`
	GPUUUID  string                   `json:"gpu_uuid"`
	Platform string                   `json:"platform,omitempty"` // the vendor layout's
	Hostname string                   `json:"hostname,omitempty"`
	Metrics  map[string]AIPerfGPUStat `json:"metrics"`
}

// AIPerfGPUStat is one metric's statistics. A gauge has them all; a counter (energy) only its growth
// over the span, as avg; AIPerf leaves out what it does not write.
type AIPerfGPUStat struct {
	Unit  string       `json:"unit"`
	Avg   float64      `json:"avg"`
	Min   Opt[float64] `json:"min,omitzero"`
	Max   Opt[float64] `json:"max,omitzero"`
	P1    Opt[float64] `json:"p1,omitzero"`
	P5    Opt[float64] `json:"p5,omitzero"`
	P10   Opt[float64] `json:"p10,omitzero"`
	P25   Opt[float64] `json:"p25,omitzero"`
	P50   Opt[float64] `json:"p50,omitzero"`
	P75   Opt[float64] `json:"p75,omitzero"`
	P90   Opt[float64] `json:"p90,omitzero"`
	P95   Opt[float64] `json:"p95,omitzero"`
	P99   Opt[float64] `json:"p99,omitzero"`
	Std   Opt[float64] `json:"std,omitzero"`
	Count Opt[int]     `json:"count,omitzero"`
	Sum   Opt[float64] `json:"sum,omitzero"`
}

// SummarizeAIPerfGPU computes the telemetry_data section AIPerf would write for these samples over
// the span, in the given layout: per source and GPU, the metrics of AIPerf's default set that the
// readings have (power, energy, utilisation, memory used, temperature, SM activity), with AIPerf's
// statistics: min, max, mean, sum, sample standard deviation, count and percentiles (linear
// interpolation) of a gauge; the growth of the energy counter, a reset counting as none. It is nil
// when there is no sample. Two GPUs under one source and index (which AIPerf would overwrite one with
// the other) are an error.
func SummarizeAIPerfGPU(samples []GPUSample, w AIPerfGPUWindow, layout string) (*AIPerfTelemetryData, error) {
	if err := checkAIPerfGPULayout(layout); err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, nil
	}
	type series struct {
		source string
		gpu    GPUReading // identity, from the first reading
		points []aiperfGPUPoint
	}
	var order []string
	bySeries := map[string]*series{}
	var sources []string
	sourceSeen := map[string]bool{}
	for _, s := range samples {
		if !sourceSeen[s.Source] {
			sourceSeen[s.Source] = true
			sources = append(sources, s.Source)
		}
		for _, g := range s.GPUs {
			k := s.Source + "\x00" + g.Key()
			sr := bySeries[k]
			if sr == nil {
				sr = &series{source: s.Source, gpu: g}
				bySeries[k] = sr
				order = append(order, k)
			}
			sr.points = append(sr.points, aiperfGPUPoint{t: s.TNs, r: g})
		}
	}
	out := &AIPerfTelemetryData{
		Summary: AIPerfTelemetrySummary{
			EndpointsConfigured: sources, EndpointsSuccessful: sources,
			StartTime: aiperfLocalTime(w.StartNs), EndTime: aiperfLocalTime(w.EndNs),
		},
		Endpoints: map[string]AIPerfGPUEndpoint{},
	}
	for _, k := range order {
		sr := bySeries[k]
		index, uuid, model, err := aiperfGPUIdentity(sr.gpu)
		if err != nil {
			return nil, fmt.Errorf("GPU telemetry of %s: %w", sr.source, err)
		}
		sort.SliceStable(sr.points, func(i, j int) bool { return sr.points[i].t < sr.points[j].t })
		endpoint := aiperfEndpointDisplay(sr.source)
		ep, ok := out.Endpoints[endpoint]
		if !ok {
			ep = AIPerfGPUEndpoint{GPUs: map[string]AIPerfGPUSummary{}}
			out.Endpoints[endpoint] = ep
		}
		key := "gpu_" + strconv.Itoa(index)
		if other, dup := ep.GPUs[key]; dup {
			return nil, fmt.Errorf("GPU telemetry of %s: GPUs %s and %s are both %s of %s in AIPerf's summary, which keys a GPU by its source and index",
				sr.source, other.GPUUUID, uuid, key, endpoint)
		}
		gs := AIPerfGPUSummary{GPUIndex: index, GPUName: model, GPUUUID: uuid, Hostname: sr.gpu.Host, Metrics: map[string]AIPerfGPUStat{}}
		if layout == AIPerfGPULayoutVendor {
			gs.Platform = "nvidia"
		}
		for _, f := range aiperfGPUFields {
			if !f.summarized {
				continue
			}
			if st, ok := aiperfGPUStat(sr.points, f, w, layout); ok {
				gs.Metrics[f.name(layout)] = st
			}
		}
		ep.GPUs[key] = gs
	}
	return out, nil
}

// aiperfGPUPoint is one GPU's reading at one time.
type aiperfGPUPoint struct {
	t int64
	r GPUReading
}

// aiperfGPUStat is one metric of one GPU over the span, false when no reading in it has the value.
func aiperfGPUStat(points []aiperfGPUPoint, f aiperfGPUField, w AIPerfGPUWindow, layout string) (AIPerfGPUStat, bool) {
	var in []float64
	var before *float64 // the last value before the span: a counter's baseline
	for i := range points {
		p := *f.get(&points[i].r)
		if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
			continue
		}
		switch t := points[i].t; {
		case t < w.StartNs:
			before = p
		case t <= w.EndNs:
			in = append(in, f.toAIPerf(*p, layout))
		}
	}
	if len(in) == 0 {
		return AIPerfGPUStat{}, false
	}
	if f.counter {
		base := in[0]
		if before != nil {
			base = f.toAIPerf(*before, layout)
		}
		return AIPerfGPUStat{Unit: f.unit, Avg: max(in[len(in)-1]-base, 0)}, true
	}
	sorted := append([]float64(nil), in...)
	sort.Float64s(sorted)
	sum := 0.0
	for _, v := range in {
		sum += v
	}
	mean := sum / float64(len(in))
	std := 0.0 // AIPerf's for one reading
	if len(in) > 1 {
		ss := 0.0
		for _, v := range in {
			ss += (v - mean) * (v - mean)
		}
		std = math.Sqrt(ss / float64(len(in)-1))
	}
	pct := func(p float64) Opt[float64] { return Some(aiperfPercentile(sorted, p)) }
	return AIPerfGPUStat{
		Unit: f.unit, Avg: mean, Min: Some(sorted[0]), Max: Some(sorted[len(sorted)-1]),
		P1: pct(1), P5: pct(5), P10: pct(10), P25: pct(25), P50: pct(50), P75: pct(75), P90: pct(90), P95: pct(95), P99: pct(99),
		Std: Some(std), Count: Some(len(in)), Sum: Some(sum),
	}, true
}

// aiperfPercentile is numpy's default percentile (AIPerf's): linear between the two closest ranks.
func aiperfPercentile(sorted []float64, p float64) float64 {
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(rank-float64(lo))
}

// aiperfEndpointDisplay is the source as AIPerf's summary keys it: host and port, and the path
// without a trailing /metrics ("http://localhost:9401/metrics" is "localhost:9401"). A source that is
// not a URL with a host ("nvidia-smi") is kept as it is.
func aiperfEndpointDisplay(source string) string {
	u, err := url.Parse(source)
	if err != nil || u.Host == "" {
		return source
	}
	return u.Host + strings.TrimSuffix(u.Path, "/metrics")
}

// aiperfLocalTime writes a time as AIPerf's summary does: local time with no zone, microseconds
// written only when there are some.
func aiperfLocalTime(ns int64) string {
	t := time.Unix(0, ns).Local()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}
