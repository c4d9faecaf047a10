package scrape

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

func parseDCGMFile(t *testing.T, path string) metrics.GPUSample {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	s, err := ParseDCGM(file, 42, "http://h100-node:9400/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParseDCGMTwoH100s: each GPU's fields from testdata/dcgm_h100x2_metrics.txt (one H100 under
// load, one idle); the fields plload does not read (MEM_CLOCK, XID_ERRORS, …) change nothing, and
// the idle GPU has no SM_ACTIVE series, so its reading is absent rather than 0.
func TestParseDCGMTwoH100s(t *testing.T) {
	s := parseDCGMFile(t, "testdata/dcgm_h100x2_metrics.txt")
	want := metrics.GPUSample{TNs: 42, Source: "http://h100-node:9400/metrics", GPUs: []metrics.GPUReading{
		{GPU: "0", UUID: "GPU-00000000-0000-0000-0000-000000000000", Model: "NVIDIA H100 80GB HBM3", Host: "h100-node",
			PowerW: ptr(631.95), EnergyMJ: ptr(18734125963), UtilPct: ptr(100), SMActive: ptr(0.99),
			MemUsedMiB: ptr(19818), MemFreeMiB: ptr(61263), MemTotalMiB: ptr(81559), TempC: ptr(59), SMClockMHz: ptr(1980)},
		{GPU: "1", UUID: "GPU-00000000-0000-0000-0000-000000000001", Model: "NVIDIA H100 80GB HBM3", Host: "h100-node",
			PowerW: ptr(69.85), EnergyMJ: ptr(9875540312), UtilPct: ptr(0),
			MemUsedMiB: ptr(0), MemFreeMiB: ptr(81081), MemTotalMiB: ptr(81559), TempC: ptr(41), SMClockMHz: ptr(345)},
	}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Fatalf("sample (-want +got):\n%s", diff)
	}
}

// TestParseDCGMKubernetesPodsDoNotSplitAGPU: in testdata/dcgm_k8s_metrics.txt GPU 0 is shared by
// two pods, so every field is listed once per pod, and GPU_UTIL and FB_USED add each pod's share
// beside the device's own series. GPU 0 is still one GPU with the device's values — not 2 × 631.95 W,
// not 100 + 64 + 36 %; GPU 1, unassigned, carries empty pod labels.
func TestParseDCGMKubernetesPodsDoNotSplitAGPU(t *testing.T) {
	s := parseDCGMFile(t, "testdata/dcgm_k8s_metrics.txt")
	if len(s.GPUs) != 2 {
		t.Fatalf("%d GPUs, want 2: %+v", len(s.GPUs), s.GPUs)
	}
	g := s.GPUs[0]
	if g.GPU != "0" || g.Host != "h100-node" || *g.PowerW != 631.95 || *g.UtilPct != 100 || *g.MemUsedMiB != 19818 ||
		*g.MemFreeMiB != 61263 || *g.EnergyMJ != 18734125963 || *g.TempC != 59 || *g.SMClockMHz != 1980 {
		t.Fatalf("GPU 0: %s", readingString(g))
	}
	if g := s.GPUs[1]; g.GPU != "1" || *g.PowerW != 69.85 || *g.UtilPct != 0 || *g.MemUsedMiB != 0 {
		t.Fatalf("GPU 1: %s", readingString(g))
	}
}

// TestParseDCGMPodCopiesWithoutDeviceSeries: where a GPU appears only as pod copies (every pod's
// series of a field that has no per-process share) the value is one copy, whatever the pod order.
func TestParseDCGMPodCopiesWithoutDeviceSeries(t *testing.T) {
	text := `# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="3",UUID="GPU-3",pod_name="b",pod_namespace="x",container_name="c"} 300.5
DCGM_FI_DEV_POWER_USAGE{gpu="3",UUID="GPU-3",pod_name="a",pod_namespace="x",container_name="c"} 300.5
DCGM_FI_DEV_POWER_USAGE{gpu="3",UUID="GPU-3",pod_name="c",pod_namespace="x",container_name="c"} 300.5
`
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 1 || *s.GPUs[0].PowerW != 300.5 {
		t.Fatalf("%+v", s.GPUs)
	}
}

// TestParseDCGMDeviceSeriesWinsWhereverListed: the order of series in Prometheus text means
// nothing, so the device's own GPU_UTIL is taken even after the pods' per-process shares.
func TestParseDCGMDeviceSeriesWinsWhereverListed(t *testing.T) {
	text := `# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pod="p1",namespace="n",container="c",pod_uid="u1"} 64
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pod="p2",namespace="n",container="c",pod_uid="u2"} 36
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 100
`
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 1 || *s.GPUs[0].UtilPct != 100 {
		t.Fatalf("%+v", s.GPUs)
	}
}

// TestParseDCGMNoReadingIsAbsent: NaN, ±Inf and DCGM's blank sentinels (an older exporter wrote the
// int64 "not supported" 9223372036854775794 into /metrics, dcgm-exporter's README shows it; the fp64
// ones are 2^47 + 0…3) leave the value absent, and the sample still writes as JSON.
func TestParseDCGMNoReadingIsAbsent(t *testing.T) {
	text := `# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} NaN
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} +Inf
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a"} 9223372036854775794
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a"} 140737488355330.000000
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a"} 2147483634
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 37
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a"} -Inf
`
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	want := []metrics.GPUReading{{GPU: "0", UUID: "GPU-a", UtilPct: ptr(37)}}
	if diff := cmp.Diff(want, s.GPUs); diff != "" {
		t.Fatalf("readings (-want +got):\n%s", diff)
	}
	if line := string(s.AppendJSON(nil)); !strings.Contains(line, `"util_pct":37`) || strings.Contains(line, "power_w") {
		t.Fatalf("JSON %s", line)
	}
}

// TestParseDCGMFieldsAreOptional: an exporter whose GPUs report no power (a counters file without
// it, a board without the sensor) but other fields is an exporter: no error, power absent.
func TestParseDCGMFieldsAreOptional(t *testing.T) {
	text := `# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",modelName="NVIDIA L4",Hostname="n1"} 31
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",modelName="NVIDIA L4",Hostname="n1"} 33
`
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 2 || s.GPUs[0].PowerW != nil || *s.GPUs[1].TempC != 33 || s.GPUs[1].Model != "NVIDIA L4" {
		t.Fatalf("%+v", s.GPUs)
	}
}

// TestParseDCGMMIGInstances: under MIG every series is one GPU instance (GPU_I_ID) of the same
// device UUID (the layout of dcgm-exporter issue #317's A30 output): the device's power repeats in
// each, the framebuffer is split between them and adds up, SM activity is weighted by the
// instances' compute slices (1g and 2g here: (0.5×1 + 0.8×2) / 3 = 0.7).
func TestParseDCGMMIGInstances(t *testing.T) {
	l := func(id, profile string) string {
		return `{gpu="0",UUID="GPU-mig",modelName="NVIDIA A30",GPU_I_PROFILE="` + profile + `",GPU_I_ID="` + id + `",Hostname="n"}`
	}
	text := "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" +
		"DCGM_FI_DEV_POWER_USAGE" + l("3", "1g.6gb") + " 52.636000\n" +
		"DCGM_FI_DEV_POWER_USAGE" + l("1", "2g.12gb") + " 52.636000\n" +
		"# TYPE DCGM_FI_DEV_FB_FREE gauge\n" +
		"DCGM_FI_DEV_FB_FREE" + l("3", "1g.6gb") + " 2207\n" +
		"DCGM_FI_DEV_FB_FREE" + l("1", "2g.12gb") + " 9000\n" +
		"# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n" +
		"DCGM_FI_PROF_SM_ACTIVE" + l("3", "1g.6gb") + " 0.5\n" +
		"DCGM_FI_PROF_SM_ACTIVE" + l("1", "2g.12gb") + " 0.8\n"
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 1 {
		t.Fatalf("%d GPUs, want the one device: %+v", len(s.GPUs), s.GPUs)
	}
	g := s.GPUs[0]
	if *g.PowerW != 52.636 || *g.MemFreeMiB != 11207 || *g.SMActive < 0.7-1e-12 || *g.SMActive > 0.7+1e-12 {
		t.Fatalf("%s", readingString(g))
	}
}

// TestParseDCGMOrderAndKeys: readings sort by host, then by index as a number (10 after 2); without
// a UUID label a GPU is its host and index, so two hosts' GPU 0 stay two GPUs; the older label
// spellings (uuid, hostname) are read too.
func TestParseDCGMOrderAndKeys(t *testing.T) {
	text := `# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="10",Hostname="b"} 1
DCGM_FI_DEV_GPU_TEMP{gpu="2",Hostname="b"} 2
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="b"} 3
DCGM_FI_DEV_GPU_TEMP{gpu="0",hostname="a",uuid="GPU-old"} 4
DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="c"} 5
DCGM_FI_DEV_GPU_TEMP{Hostname="c"} 6
`
	s, err := ParseDCGM(strings.NewReader(text), 1, "x")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range s.GPUs {
		got = append(got, g.Key()+"="+formatOpt(g.TempC))
	}
	want := []string{"GPU-old=4", "b/0=3", "b/2=2", "b/10=1", "c/0=5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

// TestParseDCGMRefusesAnEngineEndpoint: a vLLM or llama.cpp /metrics is Prometheus text, but not an
// exporter's: the error says no DCGM fields, so a GPU URL pointed at the model server is caught.
func TestParseDCGMRefusesAnEngineEndpoint(t *testing.T) {
	llama, err := os.ReadFile("testdata/llamacpp_metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	vllm := `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.31
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 1024.0
`
	for name, text := range map[string]string{"vllm": vllm, "llama.cpp": string(llama)} {
		_, err := ParseDCGM(strings.NewReader(text), 1, "x")
		if !errors.Is(err, ErrNoDCGMFields) || !strings.Contains(err.Error(), "no DCGM fields (DCGM_FI_DEV_POWER_USAGE") {
			t.Errorf("%s: error %v, want the no-DCGM-fields one", name, err)
		}
	}
}

// TestParseDCGMRefusesGarbage: an answer that is not Prometheus text (an HTML error page, JSON) is
// an error that says so, not an empty sample.
func TestParseDCGMRefusesGarbage(t *testing.T) {
	for _, text := range []string{
		"<html><body>502 Bad Gateway</body></html>\n",
		`{"gpus": [{"power": 300}]}` + "\n",
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 300\n",
	} {
		_, err := ParseDCGM(strings.NewReader(text), 1, "x")
		if err == nil || !strings.Contains(err.Error(), "not Prometheus text") {
			t.Errorf("%q: error %v, want not Prometheus text", text, err)
		}
	}
}

func formatOpt(v *float64) string {
	if v == nil {
		return "absent"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func readingString(g metrics.GPUReading) string {
	fields := []struct {
		name string
		v    *float64
	}{{"power", g.PowerW}, {"energy", g.EnergyMJ}, {"util", g.UtilPct}, {"sm_active", g.SMActive}, {"used", g.MemUsedMiB},
		{"free", g.MemFreeMiB}, {"total", g.MemTotalMiB}, {"temp", g.TempC}, {"sm_clock", g.SMClockMHz}}
	out := g.Key()
	for _, f := range fields {
		out += " " + f.name + "=" + formatOpt(f.v)
	}
	return out
}
