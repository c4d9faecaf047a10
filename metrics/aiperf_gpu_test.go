package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func f64(v float64) *float64 { return &v }

// docGPU is the GPU of AIPerf's GPU telemetry tutorial (an H100 behind DCGM on localhost:9401), with
// readings in plload's units: 88402 MiB used is the tutorial's 92.696215552 GB, 229901671 mJ its
// 0.229901671 MJ.
func docGPU() GPUReading {
	return GPUReading{
		GPU: "0", UUID: "GPU-afc3c15a-48a5-d669-0634-191c629f95fa", Model: "NVIDIA H100 80GB HBM3", Host: "69450c620e4d",
		PowerW: f64(378.343), EnergyMJ: f64(229901671), UtilPct: f64(66), MemUsedMiB: f64(88402), TempC: f64(39),
		SMActive: f64(0.5), MemFreeMiB: f64(8953), SMClockMHz: f64(1980),
	}
}

const docSource = "http://localhost:9401/metrics"

// The exact lines AIPerf writes for that reading, in each generation of its names (keys in the order
// of its record; absent values left out; the second GPU has no name, so AIPerf's stand-ins are written).
func TestAIPerfGPUWriteIsAIPerfsLine(t *testing.T) {
	samples := []GPUSample{{TNs: 1760320083689885000, Source: docSource, GPUs: []GPUReading{
		docGPU(),
		{GPU: "1", PowerW: f64(120.57), UtilPct: f64(math.NaN())},
	}}}
	want := map[string]string{
		AIPerfGPULayoutPlain: `{"gpu_index":0,"gpu_uuid":"GPU-afc3c15a-48a5-d669-0634-191c629f95fa","gpu_model_name":"NVIDIA H100 80GB HBM3",` +
			`"hostname":"69450c620e4d","timestamp_ns":1760320083689885000,"dcgm_url":"http://localhost:9401/metrics","telemetry_data":{` +
			`"gpu_power_usage":378.343,"energy_consumption":0.229901671,"gpu_utilization":66,"gpu_memory_used":92.69621555200001,` +
			`"gpu_temperature":39,"sm_utilization":50,"fb_free":8953,"sm_clock":1980}}` + "\n" +
			`{"gpu_index":1,"gpu_uuid":"GPU-unknown-1","gpu_model_name":"Unknown GPU","timestamp_ns":1760320083689885000,` +
			`"dcgm_url":"http://localhost:9401/metrics","telemetry_data":{"gpu_power_usage":120.57}}` + "\n",
		AIPerfGPULayoutVendor: `{"gpu_index":0,"gpu_uuid":"GPU-afc3c15a-48a5-d669-0634-191c629f95fa","gpu_model_name":"NVIDIA H100 80GB HBM3",` +
			`"hostname":"69450c620e4d","platform":"nvidia","timestamp_ns":1760320083689885000,"telemetry_source_url":"http://localhost:9401/metrics",` +
			`"telemetry_data":{"nvidia_power_usage":378.343,"nvidia_energy_consumption":0.229901671,"nvidia_gpu_utilization":66,` +
			`"nvidia_memory_used":92.69621555200001,"nvidia_temperature":39,"nvidia_sm_utilization":50,"nvidia_fb_free":9387.900928,"nvidia_sm_clock":1980}}` + "\n" +
			`{"gpu_index":1,"gpu_uuid":"GPU-unknown-1","gpu_model_name":"Unknown GPU","platform":"nvidia","timestamp_ns":1760320083689885000,` +
			`"telemetry_source_url":"http://localhost:9401/metrics","telemetry_data":{"nvidia_power_usage":120.57}}` + "\n",
	}
	for layout, w := range want {
		var b bytes.Buffer
		if err := WriteAIPerfGPUTelemetry(&b, samples, layout); err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if got := b.String(); got != w {
			t.Errorf("%s layout:\n got %s\nwant %s", layout, got, w)
		}
	}
}

// sameReading compares two readings, values to a relative 1e-12 (unit conversions round).
func sameReading(t *testing.T, where string, got, want GPUReading) {
	t.Helper()
	if got.GPU != want.GPU || got.UUID != want.UUID || got.Model != want.Model || got.Host != want.Host {
		t.Errorf("%s: identity %q/%q/%q/%q, want %q/%q/%q/%q", where, got.GPU, got.UUID, got.Model, got.Host, want.GPU, want.UUID, want.Model, want.Host)
	}
	for _, f := range aiperfGPUFields {
		g, w := *f.get(&got), *f.get(&want)
		switch {
		case (g == nil) != (w == nil):
			t.Errorf("%s: %s present %v, want %v", where, f.plain, g != nil, w != nil)
		case g != nil && math.Abs(*g-*w) > 1e-12*math.Abs(*w):
			t.Errorf("%s: %s %v, want %v", where, f.plain, *g, *w)
		}
	}
}

func sameSamples(t *testing.T, got, want []GPUSample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].TNs != want[i].TNs || got[i].Source != want[i].Source || len(got[i].GPUs) != len(want[i].GPUs) {
			t.Fatalf("sample %d: t %d source %s %d GPUs, want t %d source %s %d GPUs", i, got[i].TNs, got[i].Source, len(got[i].GPUs),
				want[i].TNs, want[i].Source, len(want[i].GPUs))
		}
		for j := range want[i].GPUs {
			sameReading(t, want[i].Source+" GPU "+want[i].GPUs[j].GPU, got[i].GPUs[j], want[i].GPUs[j])
		}
	}
}

// What plload writes in AIPerf's layout reads back as the same samples, in either generation: two
// sources scraped at their own times, one GPU with no name and readings nvidia-smi cannot give.
func TestAIPerfGPURoundTrip(t *testing.T) {
	second := docGPU()
	second.GPU, second.UUID, second.SMActive = "1", "GPU-0b1c2d3e-0000-1111-2222-333344445555", f64(0.125)
	second.MemTotalMiB = f64(97871)
	smi := GPUReading{GPU: "0", PowerW: f64(71.5), UtilPct: f64(3), MemUsedMiB: f64(1024.5), MemFreeMiB: f64(23000), MemTotalMiB: f64(24576), TempC: f64(41)}
	samples := []GPUSample{
		{TNs: 1_000_000_000, Source: docSource, GPUs: []GPUReading{docGPU(), second}},
		{TNs: 1_300_000_000, Source: "nvidia-smi", GPUs: []GPUReading{smi}},
		{TNs: 2_000_000_000, Source: docSource, GPUs: []GPUReading{second, docGPU()}},
		{TNs: 2_300_000_000, Source: "nvidia-smi", GPUs: []GPUReading{smi}},
	}
	for _, layout := range []string{AIPerfGPULayoutPlain, AIPerfGPULayoutVendor} {
		var b bytes.Buffer
		if err := WriteAIPerfGPUTelemetry(&b, samples, layout); err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		got, err := ReadAIPerfGPUTelemetry(&b)
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		sameSamples(t, got, samples)
	}
}

// aiperfDocumentedLines are lines in AIPerf's layouts built from what AIPerf documents and its code
// writes: the tutorial's H100 behind DCGM (plain names, with AIPerf's PCI bus, device, memory-bandwidth
// and XID fields and a custom fb_free in raw MiB); a second GPU of the same scrape with AIPerf's
// stand-in identity and a value its writer scrubbed to null; the NVML and amdsmi readings of AIPerf's
// main-branch parity fixture (250 W, 3 000 000 mJ, 12 GB; 300 W, 4 J, 15 GiB) in the vendor names.
const aiperfDocumentedLines = `{"gpu_index":0,"gpu_uuid":"GPU-afc3c15a-48a5-d669-0634-191c629f95fa","gpu_model_name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:02:00.0","device":"nvidia0","hostname":"69450c620e4d","timestamp_ns":1760320083689885000,"dcgm_url":"http://localhost:9401/metrics","telemetry_data":{"gpu_power_usage":378.343,"energy_consumption":0.229901671,"gpu_utilization":66.0,"gpu_memory_used":92.69621555200001,"gpu_temperature":39.0,"mem_utilization":29.0,"xid_errors":0.0,"fb_free":8953.0}}

{"gpu_index":1,"gpu_uuid":"GPU-unknown-1","gpu_model_name":"Unknown GPU","timestamp_ns":1760320083689885000,"dcgm_url":"http://localhost:9401/metrics","telemetry_data":{"gpu_power_usage":120.57,"gpu_utilization":null}}
{"gpu_index":0,"gpu_uuid":"GPU-nvml","gpu_model_name":"H100","pci_bus_id":"0000:01:00.0","device":"nvidia0","hostname":"localhost","platform":"nvidia","timestamp_ns":123,"telemetry_source_url":"pynvml://localhost","telemetry_data":{"nvidia_power_usage":250.0,"nvidia_energy_consumption":0.003,"nvidia_gpu_utilization":80.0,"nvidia_memory_utilization":40.0,"nvidia_memory_used":12.0,"nvidia_temperature":65.0,"nvidia_decoder_utilization":12.0,"nvidia_encoder_utilization":34.0,"nvidia_jpg_utilization":56.0,"nvidia_sm_utilization":25.0,"nvidia_power_violation":4.0}}
{"gpu_index":0,"gpu_uuid":"GPU-amd","gpu_model_name":"MI300X","pci_bus_id":"0000:41:00.0","device":"amd0","hostname":"localhost","platform":"amd","timestamp_ns":123,"telemetry_source_url":"amdsmi://localhost","telemetry_data":{"amd_power":300.0,"amd_energy_consumption":4e-06,"amd_gfx_activity":70.0,"amd_umc_activity":30.0,"amd_memory_used":16.10612736,"amd_temperature":72.0,"amd_ecc_uncorrectable":3.0,"amd_throttle_status":1.0}}
`

func TestAIPerfGPUReadsAIPerfsLines(t *testing.T) {
	got, err := ReadAIPerfGPUTelemetry(strings.NewReader(aiperfDocumentedLines))
	if err != nil {
		t.Fatal(err)
	}
	h100 := GPUReading{GPU: "0", UUID: "GPU-afc3c15a-48a5-d669-0634-191c629f95fa", Model: "NVIDIA H100 80GB HBM3", Host: "69450c620e4d",
		PowerW: f64(378.343), EnergyMJ: f64(229901671), UtilPct: f64(66), MemUsedMiB: f64(88402), TempC: f64(39), MemFreeMiB: f64(8953)}
	want := []GPUSample{
		{TNs: 123, Source: "pynvml://localhost", GPUs: []GPUReading{{GPU: "0", UUID: "GPU-nvml", Model: "H100", Host: "localhost",
			PowerW: f64(250), EnergyMJ: f64(3e6), UtilPct: f64(80), MemUsedMiB: f64(12e9 / (1 << 20)), TempC: f64(65), SMActive: f64(0.25)}}},
		// AMD's activity counters are not NVIDIA's utilisation; power, energy, memory and temperature are.
		{TNs: 123, Source: "amdsmi://localhost", GPUs: []GPUReading{{GPU: "0", UUID: "GPU-amd", Model: "MI300X", Host: "localhost",
			PowerW: f64(300), EnergyMJ: f64(4000), MemUsedMiB: f64(15360), TempC: f64(72)}}},
		{TNs: 1760320083689885000, Source: docSource, GPUs: []GPUReading{h100, {GPU: "1", PowerW: f64(120.57)}}},
	}
	sameSamples(t, got, want)

	// A line with both names of a quantity (AIPerf's main branch reads old names as aliases): the
	// vendor name, the current one, counts.
	both := `{"gpu_index":0,"timestamp_ns":1,"telemetry_source_url":"x","telemetry_data":{"gpu_power_usage":1,"nvidia_power_usage":2}}`
	got, err = ReadAIPerfGPUTelemetry(strings.NewReader(both))
	if err != nil || len(got) != 1 || *got[0].GPUs[0].PowerW != 2 {
		t.Errorf("both names: %+v, %v; want the vendor name's 2 W", got, err)
	}
}

func TestAIPerfGPUReadErrorsNameTheLine(t *testing.T) {
	good := `{"gpu_index":0,"gpu_uuid":"GPU-a","gpu_model_name":"H100","timestamp_ns":1,"dcgm_url":"http://h:9400/metrics","telemetry_data":{"gpu_power_usage":1}}` + "\n"
	for _, c := range []struct{ name, line, want string }{
		{"cut short", `{"gpu_index":0,"gpu_uuid"`, "line 2: not a JSON object"},
		{"an array", `[1,2]`, "line 2: not a JSON object: an array, not an object"},
		{"plload's own file", `{"t_ns":1,"source":"nvidia-smi","gpus":[]}`, "line 2: this is plload's own gpu_metrics.jsonl"},
		{"a records file", `{"metadata":{"request_start_ns":1},"metrics":{}}`, "line 2: this is a records file"},
		{"no source", `{"gpu_index":0,"timestamp_ns":1,"telemetry_data":{}}`, "line 2: no source: neither dcgm_url nor telemetry_source_url"},
		{"no gpu_index", `{"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{}}`, "line 2: no gpu_index"},
		{"fractional index", `{"gpu_index":1.5,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{}}`, "line 2: gpu_index 1.5 is not a device index"},
		{"negative index", `{"gpu_index":-1,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{}}`, "line 2: gpu_index -1 is not a device index"},
		{"fractional time", `{"gpu_index":0,"timestamp_ns":1.5,"dcgm_url":"x","telemetry_data":{}}`, "line 2: timestamp_ns 1.5 is not an integer"},
		{"telemetry_data a list", `{"gpu_index":0,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":[1]}`, "line 2: telemetry_data is a JSON array, not what AIPerf writes there"},
		{"a number for the uuid", `{"gpu_index":0,"gpu_uuid":7,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{}}`, "line 2: gpu_uuid is a JSON number"},
		{"an index as a word", `{"gpu_index":"first","timestamp_ns":1,"dcgm_url":"x","telemetry_data":{}}`, "line 2: a value AIPerf does not write: json: invalid number literal"},
		{"an energy past float64 in mJ", `{"gpu_index":0,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{"energy_consumption":1e308}}`,
			"line 2: telemetry_data.energy_consumption: 1e308 is beyond any reading"},
		{"no telemetry_data", `{"gpu_index":0,"timestamp_ns":1,"dcgm_url":"x"}`, "line 2: no telemetry_data object"},
		{"a value as text", `{"gpu_index":0,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{"gpu_temperature":"hot"}}`,
			`line 2: telemetry_data.gpu_temperature: "hot" is not a number`},
		{"one GPU twice in a scrape", strings.TrimSpace(good), "line 2: GPU GPU-a of http://h:9400/metrics at timestamp_ns 1 again (first on line 1)"},
	} {
		_, err := ReadAIPerfGPUTelemetry(strings.NewReader(good + c.line + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if got, err := ReadAIPerfGPUTelemetry(strings.NewReader("\n\n")); err != nil || len(got) != 0 {
		t.Errorf("an empty file: %v, %v; want no samples and no error", got, err)
	}
}

func TestAIPerfGPUWriteErrors(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAIPerfGPUTelemetry(&b, nil, "nvidia"); err == nil || !strings.Contains(err.Error(), `"plain"`) {
		t.Errorf("an unknown layout: %v, want the accepted ones named", err)
	}
	s := []GPUSample{{TNs: 5, Source: docSource, GPUs: []GPUReading{{GPU: "0"}}}, {TNs: 7, Source: docSource, GPUs: []GPUReading{{GPU: "0/1"}}}}
	err := WriteAIPerfGPUTelemetry(&b, s, AIPerfGPULayoutPlain)
	if err == nil || !strings.Contains(err.Error(), `GPU sample 2 (t_ns 7, source http://localhost:9401/metrics): GPU "0/1" is not a device index`) {
		t.Errorf("a GPU AIPerf cannot number: %v", err)
	}
}

// The summary section over a span: readings before it are a counter's baseline only, readings after
// it are left out; numbers worked by hand.
func TestAIPerfGPUSummary(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	const start = 1760320083689885000   // the tutorial's start_time, 2025-10-13T01:48:03.689885
	end := int64(start + 4_310_115_000) // 01:48:08 exactly
	read := func(dt int64, power, energy float64) GPUSample {
		g := docGPU()
		g.PowerW, g.EnergyMJ = f64(power), f64(energy)
		return GPUSample{TNs: start + dt, Source: docSource, GPUs: []GPUReading{g}}
	}
	samples := []GPUSample{
		read(-500_000_000, 50, 1_000_000_000), // before: the energy baseline
		read(1_000_000_000, 200, 1_100_000_000),
		read(0, 100, 1_050_000_000), // out of order: sorted by time
		read(2_000_000_000, 300, 1_300_000_000),
		read(end-start, 400, 1_500_000_000),   // at the end: in
		read(end-start+1, 900, 9_000_000_000), // after: out
	}
	got, err := SummarizeAIPerfGPU(samples, AIPerfGPUWindow{StartNs: start, EndNs: end}, AIPerfGPULayoutPlain)
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary.StartTime != "2025-10-13T01:48:03.689885" || got.Summary.EndTime != "2025-10-13T01:48:08" {
		t.Errorf("times %s … %s", got.Summary.StartTime, got.Summary.EndTime)
	}
	if !reflect.DeepEqual(got.Summary.EndpointsConfigured, []string{docSource}) {
		t.Errorf("endpoints %v", got.Summary.EndpointsConfigured)
	}
	gpu, ok := got.Endpoints["localhost:9401"].GPUs["gpu_0"]
	if !ok {
		t.Fatalf("no localhost:9401 gpu_0 in %+v", got.Endpoints)
	}
	if gpu.GPUName != "NVIDIA H100 80GB HBM3" || gpu.GPUUUID != "GPU-afc3c15a-48a5-d669-0634-191c629f95fa" || gpu.Hostname != "69450c620e4d" || gpu.Platform != "" {
		t.Errorf("identity %+v", gpu)
	}
	p := gpu.Metrics["gpu_power_usage"]
	// 100, 200, 300, 400: sample std √(50000/3); p90 at rank 2.7 is 370, p1 at rank 0.03 is 103.
	want := AIPerfGPUStat{Unit: "W", Avg: 250, Min: Some(100.0), Max: Some(400.0), P1: Some(103.0), P5: Some(115.0), P10: Some(130.0),
		P25: Some(175.0), P50: Some(250.0), P75: Some(325.0), P90: Some(370.0), P95: Some(385.0), P99: Some(397.0),
		Std: Some(math.Sqrt(50000.0 / 3)), Count: Some(4), Sum: Some(1000.0)}
	if !reflect.DeepEqual(roundStat(p), roundStat(want)) {
		t.Errorf("power\n got %+v\nwant %+v", p, want)
	}
	// 1.5e9 − 1.0e9 mJ since the reading before the span: 0.5 MJ, and nothing but the unit and avg.
	e := gpu.Metrics["energy_consumption"]
	if e.Unit != "MJ" || math.Abs(e.Avg-0.5) > 1e-12 {
		t.Errorf("energy %+v, want 0.5 MJ", e)
	}
	if b, _ := json.Marshal(e); !regexp.MustCompile(`^\{"unit":"MJ","avg":0\.(5|4999)\d*\}$`).MatchString(string(b)) {
		t.Errorf("energy is written %s, want only unit and avg", b)
	}
	// Every gauge of the reading is there; the custom fields are not in AIPerf's default summary.
	var names []string
	for n := range gpu.Metrics {
		names = append(names, n)
	}
	wantNames := []string{"energy_consumption", "gpu_memory_used", "gpu_power_usage", "gpu_temperature", "gpu_utilization", "sm_utilization"}
	sort.Strings(names)
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("metrics %v, want %v", names, wantNames)
	}
	if m := gpu.Metrics["gpu_memory_used"]; m.Unit != "GB" || math.Abs(m.Avg-92.69621555200001) > 1e-12 || m.Std.V != 0 {
		t.Errorf("memory %+v", m)
	}
	if m := gpu.Metrics["sm_utilization"]; m.Unit != "%" || m.Avg != 50 {
		t.Errorf("SM %+v", m)
	}

	// The vendor names, and the platform; a counter that went back counts as no growth.
	samples[4].GPUs[0].EnergyMJ = f64(10)
	got, err = SummarizeAIPerfGPU(samples, AIPerfGPUWindow{StartNs: start, EndNs: end}, AIPerfGPULayoutVendor)
	if err != nil {
		t.Fatal(err)
	}
	gpu = got.Endpoints["localhost:9401"].GPUs["gpu_0"]
	if gpu.Platform != "nvidia" || gpu.Metrics["nvidia_power_usage"].Avg != 250 || gpu.Metrics["nvidia_energy_consumption"] != (AIPerfGPUStat{Unit: "MJ"}) {
		t.Errorf("vendor layout %+v", gpu)
	}
	b, _ := json.Marshal(got)
	for _, key := range []string{`"telemetry_source_url"`, `"gpu_power_usage"`} {
		if strings.Contains(string(b), key) {
			t.Errorf("vendor summary has %s: %s", key, b)
		}
	}
}

func TestAIPerfGPUSummaryEdges(t *testing.T) {
	if got, err := SummarizeAIPerfGPU(nil, AIPerfGPUWindow{StartNs: 0, EndNs: 10}, AIPerfGPULayoutPlain); got != nil || err != nil {
		t.Errorf("no samples: %+v, %v; want nil", got, err)
	}
	// One reading: std 0, every percentile the reading. A reading with no value in the span: no metric.
	one := []GPUSample{{TNs: 5, Source: "nvidia-smi", GPUs: []GPUReading{{GPU: "0", TempC: f64(40)}, {GPU: "1", TempC: nil}}}}
	got, err := SummarizeAIPerfGPU(one, AIPerfGPUWindow{StartNs: 0, EndNs: 10}, AIPerfGPULayoutPlain)
	if err != nil {
		t.Fatal(err)
	}
	ep := got.Endpoints["nvidia-smi"]
	if m := ep.GPUs["gpu_0"].Metrics["gpu_temperature"]; m.Std != Some(0.0) || m.P99 != Some(40.0) || m.Count != Some(1) {
		t.Errorf("one reading %+v", m)
	}
	if g := ep.GPUs["gpu_1"]; len(g.Metrics) != 0 || g.GPUUUID != "GPU-unknown-1" || g.GPUName != "Unknown GPU" {
		t.Errorf("GPU without values %+v", g)
	}
	// Two GPUs one source numbers alike would overwrite each other in AIPerf's summary.
	dup := []GPUSample{{TNs: 5, Source: docSource, GPUs: []GPUReading{{GPU: "0", UUID: "GPU-a"}, {GPU: "0", UUID: "GPU-b"}}}}
	if _, err := SummarizeAIPerfGPU(dup, AIPerfGPUWindow{StartNs: 0, EndNs: 10}, AIPerfGPULayoutPlain); err == nil ||
		!strings.Contains(err.Error(), "GPUs GPU-a and GPU-b are both gpu_0 of localhost:9401") {
		t.Errorf("two GPUs as gpu_0: %v", err)
	}
}

func TestAIPerfEndpointDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:9401/metrics": "localhost:9401", "http://node1:9400": "node1:9400", "https://h:9400/api/metrics": "h:9400/api",
		"pynvml://localhost": "localhost", "nvidia-smi": "nvidia-smi",
	} {
		if got := aiperfEndpointDisplay(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// roundStat rounds a stat's numbers to 9 significant digits, for comparing hand-worked values.
func roundStat(s AIPerfGPUStat) AIPerfGPUStat {
	r := func(o Opt[float64]) Opt[float64] {
		if !o.OK || o.V == 0 {
			return o
		}
		scale := math.Pow(10, 9-math.Ceil(math.Log10(math.Abs(o.V))))
		return Some(math.Round(o.V*scale) / scale)
	}
	s.Avg = r(Some(s.Avg)).V
	s.Min, s.Max, s.P1, s.P5, s.P10, s.P25, s.P50 = r(s.Min), r(s.Max), r(s.P1), r(s.P5), r(s.P10), r(s.P25), r(s.P50)
	s.P75, s.P90, s.P95, s.P99, s.Std, s.Sum = r(s.P75), r(s.P90), r(s.P95), r(s.P99), r(s.Std), r(s.Sum)
	return s
}

// Whatever a file holds, reading it never panics, and what it reads writes back in both layouts and
// reads again as as many samples.
func FuzzReadAIPerfGPUTelemetry(f *testing.F) {
	f.Add(aiperfDocumentedLines)
	f.Add(`{"gpu_index":0,"timestamp_ns":1,"dcgm_url":"x","telemetry_data":{"gpu_power_usage":1e308,"nvidia_sm_utilization":-0}}`)
	f.Fuzz(func(t *testing.T, text string) {
		samples, err := ReadAIPerfGPUTelemetry(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, layout := range []string{AIPerfGPULayoutPlain, AIPerfGPULayoutVendor} {
			var b bytes.Buffer
			if err := WriteAIPerfGPUTelemetry(&b, samples, layout); err != nil {
				t.Fatalf("%s: writing what was read: %v", layout, err)
			}
			again, err := ReadAIPerfGPUTelemetry(&b)
			if err != nil {
				t.Fatalf("%s: reading what was written: %v\n%s", layout, err, b.String())
			}
			if len(again) != len(samples) {
				t.Fatalf("%s: %d samples, then %d", layout, len(samples), len(again))
			}
		}
	})
}
