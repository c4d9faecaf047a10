package mock

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// dcgmCollector reads the GPU model at each scrape, so every value is the model's at that moment,
// under dcgm-exporter's names, help texts, types, units and labels (its default-counters.csv).
type dcgmCollector struct {
	g       *gpuModel
	metrics []dcgmMetric
}

// dcgmMetric is one DCGM field: its description and how to read it from a GPU's readings.
type dcgmMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(gpuReading) float64
}

// dcgmLabels are dcgm-exporter's labels of every series: the device's index, UUID, PCI address,
// device node and model, and the node's host name.
var dcgmLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}

func newDCGMCollector(g *gpuModel) *dcgmCollector {
	field := func(name, help string, kind prometheus.ValueType, value func(gpuReading) float64) dcgmMetric {
		return dcgmMetric{desc: prometheus.NewDesc(name, help, dcgmLabels, nil), kind: kind, value: value}
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &dcgmCollector{g: g, metrics: []dcgmMetric{
		field("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", gauge, func(r gpuReading) float64 { return r.powerW }),
		field("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", counter, func(r gpuReading) float64 { return r.energyMJ }),
		field("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", gauge, func(r gpuReading) float64 { return r.utilPct }),
		field("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned (in %).", gauge, func(r gpuReading) float64 { return r.smActive }),
		field("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", gauge, func(r gpuReading) float64 { return r.fbUsedMiB }),
		field("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", gauge, func(r gpuReading) float64 { return r.fbFreeMiB }),
		field("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", gauge, func(r gpuReading) float64 { return r.tempC }),
		field("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", gauge, func(r gpuReading) float64 { return r.smClockMHz }),
	}}
}

func (c *dcgmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c *dcgmCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.g.read()
	for i, uuid := range c.g.uuids {
		labels := []string{strconv.Itoa(i), uuid, pciBusID(i), "nvidia" + strconv.Itoa(i), gpuModelName, c.g.hostname}
		for _, m := range c.metrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(r), labels...)
		}
	}
}

// pciBusID is GPU i's PCI address in nvidia-smi's form: one bus per device from 0x18, as on an HGX
// board, going on to the next PCI domain past bus FF.
func pciBusID(i int) string {
	bus := 0x18 + i
	return fmt.Sprintf("%08X:%02X:00.0", bus>>8, bus&0xff)
}
