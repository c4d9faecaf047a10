package metrics

import "encoding/json"

// GPUSample is one reading of one GPU telemetry source — a DCGM exporter's Prometheus endpoint, or a
// line set of a local `nvidia-smi` — at one instant: a line of stage_NN/gpu_metrics.jsonl, on the
// run's clock like server_metrics.jsonl. Package scrape reads the sources; SummarizeGPU reduces a
// stage's samples to its window.
type GPUSample struct {
	TNs    int64        `json:"t_ns"`
	Source string       `json:"source"` // the exporter's URL, or "nvidia-smi"
	GPUs   []GPUReading `json:"gpus"`
}

// GPUReading is one GPU's values in a sample. A value the source did not give (a field the exporter
// was not told to collect, "[N/A]" from nvidia-smi, NaN) is absent, never 0.
type GPUReading struct {
	// GPU is the device's index as the source names it ("0"); UUID, Model and Host identify it where
	// the source says (DCGM's UUID, modelName and Hostname labels; nvidia-smi's uuid and name).
	GPU   string `json:"gpu"`
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
	Host  string `json:"host,omitempty"`
	// PowerW is the power draw in watts (DCGM_FI_DEV_POWER_USAGE, nvidia-smi power.draw).
	PowerW *float64 `json:"power_w,omitempty"`
	// EnergyMJ is the energy used since the driver loaded, in millijoules: a counter
	// (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION). nvidia-smi has none.
	EnergyMJ *float64 `json:"energy_mj,omitempty"`
	// UtilPct is the share of time a kernel ran, 0–100 (DCGM_FI_DEV_GPU_UTIL, utilization.gpu);
	// SMActive the share of cycles with a warp active on an SM, 0–1 (DCGM_FI_PROF_SM_ACTIVE).
	UtilPct  *float64 `json:"util_pct,omitempty"`
	SMActive *float64 `json:"sm_active,omitempty"`
	// Memory in MiB (DCGM_FI_DEV_FB_USED / FB_FREE / FB_TOTAL; memory.used / free / total).
	MemUsedMiB  *float64 `json:"mem_used_mib,omitempty"`
	MemFreeMiB  *float64 `json:"mem_free_mib,omitempty"`
	MemTotalMiB *float64 `json:"mem_total_mib,omitempty"`
	TempC       *float64 `json:"temp_c,omitempty"`
	SMClockMHz  *float64 `json:"sm_clock_mhz,omitempty"`
}

// Key names the device across samples: its UUID, or its host and index where the source gives no UUID.
func (g GPUReading) Key() string {
	if g.UUID != "" {
		return g.UUID
	}
	return g.Host + "/" + g.GPU
}

// AppendJSON writes the sample as one JSON object.
func (s *GPUSample) AppendJSON(b []byte) []byte {
	out, err := json.Marshal(s)
	if err != nil {
		return append(b, "{}"...)
	}
	return append(b, out...)
}
