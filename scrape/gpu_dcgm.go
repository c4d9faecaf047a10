package scrape

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plload/plload/metrics"
)

// dcgmFields are the dcgm-exporter families ParseDCGM reads (names, units and types as NVIDIA's
// etc/default-counters.csv lists them; FB_TOTAL and PROF_SM_ACTIVE are real DCGM fields that the
// default file leaves commented out, so they are present only where the operator enabled them).
// Every field is optional: an exporter reports what its counters file asks for and its GPU supports.
var dcgmFields = []struct {
	name string
	// mem: the framebuffer is split between MIG instances, so an instance-only GPU's value is
	// the sum of its instances'; every other field is one reading of the whole device.
	mem bool
	set func(*metrics.GPUReading, *float64)
}{
	{name: "DCGM_FI_DEV_POWER_USAGE", set: func(g *metrics.GPUReading, v *float64) { g.PowerW = v }},
	{name: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", set: func(g *metrics.GPUReading, v *float64) { g.EnergyMJ = v }},
	{name: "DCGM_FI_DEV_GPU_UTIL", set: func(g *metrics.GPUReading, v *float64) { g.UtilPct = v }},
	{name: "DCGM_FI_PROF_SM_ACTIVE", set: func(g *metrics.GPUReading, v *float64) { g.SMActive = v }},
	{name: "DCGM_FI_DEV_FB_USED", mem: true, set: func(g *metrics.GPUReading, v *float64) { g.MemUsedMiB = v }},
	{name: "DCGM_FI_DEV_FB_FREE", mem: true, set: func(g *metrics.GPUReading, v *float64) { g.MemFreeMiB = v }},
	{name: "DCGM_FI_DEV_FB_TOTAL", mem: true, set: func(g *metrics.GPUReading, v *float64) { g.MemTotalMiB = v }},
	{name: "DCGM_FI_DEV_GPU_TEMP", set: func(g *metrics.GPUReading, v *float64) { g.TempC = v }},
	{name: "DCGM_FI_DEV_SM_CLOCK", set: func(g *metrics.GPUReading, v *float64) { g.SMClockMHz = v }},
}

// dcgmMarker is the prefix every DCGM field's family carries; an answer without one is not an
// exporter's (a vLLM /metrics, a node exporter), whatever else it holds.
const dcgmMarker = "DCGM_FI_"

// ErrNoDCGMFields is wrapped by ParseDCGM's error for Prometheus text without a single DCGM field,
// so that the engine can tell a wrong URL from an exporter that is failing.
var ErrNoDCGMFields = errors.New("no DCGM fields (DCGM_FI_DEV_POWER_USAGE …)")

// ParseDCGM reads one answer of an NVIDIA dcgm-exporter (Prometheus text, default
// http://HOST:9400/metrics) into a GPUSample: one reading per GPU, sorted by host and then by
// index. tNs is the sample's time on the run's clock; source names the exporter (its URL).
//
// A GPU is its UUID label (UUID, or uuid under --use-old-namespace), else its host and gpu index.
// Kubernetes mode copies a GPU's series once per pod using it (pod, namespace, container labels);
// those copies are one reading, not several, so the series without pod labels is taken where
// there is one, else any one copy. Under MIG each series is an instance (GPU_I_ID): device-wide
// fields repeat the device's value, the framebuffer adds up over the instances, and SM activity is
// the instances' ratios weighted by their compute slices. NaN, ±Inf and DCGM's "blank" sentinels
// (which older exporters let through, e.g. 9223372036854775794 in dcgm-exporter's README) are no
// reading: the value is absent, never 0.
func ParseDCGM(r io.Reader, tNs int64, source string) (metrics.GPUSample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return metrics.GPUSample{}, fmt.Errorf("not Prometheus text: %w", err)
	}
	if !hasDCGMField(families) {
		return metrics.GPUSample{}, fmt.Errorf("%w in %d metric families: is this a dcgm-exporter's /metrics (port 9400 by default)?", ErrNoDCGMFields, len(families))
	}

	gpus := map[string]*dcgmGPU{}
	var order []string
	for fi, field := range dcgmFields {
		f, ok := families[field.name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			id := dcgmIdentity(m)
			if id.key == "" {
				continue // a series that names no GPU (dcgm-exporter labels every GPU field with one)
			}
			g, ok := gpus[id.key]
			if !ok {
				g = &dcgmGPU{reading: id.reading, series: make([][]dcgmSeries, len(dcgmFields))}
				gpus[id.key] = g
				order = append(order, id.key)
			}
			v, ok := metricValue(m)
			if !ok {
				continue
			}
			g.series[fi] = append(g.series[fi], dcgmSeries{instance: labelValue(m, "GPU_I_ID"),
				profile: labelValue(m, "GPU_I_PROFILE"), pod: podLabelled(m), value: v})
		}
	}

	s := metrics.GPUSample{TNs: tNs, Source: source, GPUs: make([]metrics.GPUReading, 0, len(order))}
	for _, key := range order {
		g := gpus[key]
		for fi, field := range dcgmFields {
			if v, ok := resolveDCGM(g.series[fi], field.mem, field.name == "DCGM_FI_PROF_SM_ACTIVE"); ok {
				field.set(&g.reading, &v)
			}
		}
		s.GPUs = append(s.GPUs, g.reading)
	}
	slices.SortStableFunc(s.GPUs, compareGPUs)
	return s, nil
}

type dcgmGPU struct {
	reading metrics.GPUReading
	series  [][]dcgmSeries // per dcgmFields entry
}

// dcgmSeries is one finite value of one field for one GPU, with what tells its copies apart.
type dcgmSeries struct {
	instance, profile string // MIG GPU instance id and profile ("1g.10gb"); empty for the whole GPU
	pod               bool
	value             float64
}

type dcgmID struct {
	key     string
	reading metrics.GPUReading
}

// dcgmIdentity reads the GPU a series belongs to. The label spellings are dcgm-exporter's: UUID
// (uuid with --use-old-namespace), Hostname (hostname since 2026's #655), modelName.
func dcgmIdentity(m *dto.Metric) dcgmID {
	r := metrics.GPUReading{
		GPU:   labelValue(m, "gpu"),
		UUID:  cmp.Or(labelValue(m, "UUID"), labelValue(m, "uuid")),
		Model: labelValue(m, "modelName"),
		Host:  cmp.Or(labelValue(m, "Hostname"), labelValue(m, "hostname")),
	}
	switch {
	case r.UUID != "":
		return dcgmID{key: r.UUID, reading: r}
	case r.GPU != "":
		return dcgmID{key: r.Key(), reading: r}
	}
	return dcgmID{}
}

// podLabelled: the series is a Kubernetes pod's copy of a GPU's value. An unassigned GPU's series
// carries the labels empty (pod=""), which is the device's own.
func podLabelled(m *dto.Metric) bool {
	for _, name := range []string{"pod", "pod_name", "pod_uid"} {
		if labelValue(m, name) != "" {
			return true
		}
	}
	return false
}

// resolveDCGM reduces one field's series for one GPU to its value. Per GPU instance (or for the
// whole GPU) the series without pod labels wins, else the first pod copy: k8s mode's copies carry
// the device's value, and for GPU_UTIL and FB_USED its per-process mode adds per-pod shares beside
// the unlabelled device series, so a sum would count a GPU several times over.
func resolveDCGM(series []dcgmSeries, mem, smActive bool) (float64, bool) {
	if len(series) == 0 {
		return 0, false
	}
	perInstance := map[string]dcgmSeries{}
	var instances []string
	for _, s := range series {
		prev, seen := perInstance[s.instance]
		if !seen {
			instances = append(instances, s.instance)
		}
		if !seen || (prev.pod && !s.pod) {
			perInstance[s.instance] = s
		}
	}
	if whole, ok := perInstance[""]; ok {
		return whole.value, true
	}
	slices.SortFunc(instances, func(a, b string) int { return compareIndex(a, b) })
	switch {
	case mem:
		sum := 0.0
		for _, id := range instances {
			sum += perInstance[id].value
		}
		return sum, true
	case smActive:
		sum, weight := 0.0, 0.0
		for _, id := range instances {
			w := migSlices(perInstance[id].profile)
			sum += perInstance[id].value * w
			weight += w
		}
		return sum / weight, true
	}
	return perInstance[instances[0]].value, true
}

// migSlices is the compute slices of a MIG profile ("3g.40gb" → 3); 1 for a profile not in that form.
func migSlices(profile string) float64 {
	n, _, ok := strings.Cut(profile, "g.")
	if v, err := strconv.Atoi(n); ok && err == nil && v > 0 {
		return float64(v)
	}
	return 1
}

// metricValue is a gauge's, counter's or untyped series' value; false for other kinds and for a
// value that is no reading (NaN, ±Inf, a DCGM blank sentinel).
func metricValue(m *dto.Metric) (float64, bool) {
	v, ok := seriesValue(m)
	if !ok || dcgmBlank(v) {
		return 0, false
	}
	return v, true
}

// dcgmBlank: DCGM's sentinels for "no value" (blank, not found, not supported, not permissioned),
// as go-dcgm defines them: int32 0x7ffffff0–3, int64 0x7ffffffffffffff0–3 (which float64 rounds to
// 2^63) and fp64 2^47 + 0–3.
func dcgmBlank(v float64) bool {
	const int32Blank, fp64Blank = 0x7ffffff0, 140737488355328.0
	return (v >= int32Blank && v <= int32Blank+3) || v >= 0x7ffffffffffffff0 || (v >= fp64Blank && v <= fp64Blank+3)
}

// compareGPUs orders readings by host, then numeric GPU index, then UUID.
func compareGPUs(a, b metrics.GPUReading) int {
	return cmp.Or(strings.Compare(a.Host, b.Host), compareIndex(a.GPU, b.GPU), strings.Compare(a.UUID, b.UUID))
}

// compareIndex compares GPU indexes as numbers ("2" < "10"), and as text where one is not a number.
func compareIndex(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

func hasDCGMField(families map[string]*dto.MetricFamily) bool {
	for name := range families {
		if strings.HasPrefix(name, dcgmMarker) {
			return true
		}
	}
	return false
}
