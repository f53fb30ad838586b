package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vramtop/vramtop/internal/inert"
)

// The Collector as a prometheus.Collector, for the tests: client_golang's
// registry checks the metrics and encodes them as its own exposition, the
// reference Page is compared with. It is unchecked (Describe sends nothing)
// because, like dcgm-exporter, MIG instances carry labels that whole GPUs
// do not.

// Describe sends nothing: the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest snapshot, the ones Page writes.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap, ok := c.latest()
	fams := c.clockFamilies(snap, ok)
	if ok {
		cl, _ := c.claims()
		fams = append(fams, c.snapshotFamilies(snap, cl)...)
	}
	for _, f := range fams {
		for _, s := range f.samples {
			names := make([]string, len(s.labels))
			values := make([]string, len(s.labels))
			for i, l := range s.labels {
				// As Page writes them: inert.
				names[i], values[i] = l.name, inert.String(l.value)
			}
			desc := prometheus.NewDesc(f.name, f.help, names, nil)
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.value, values...)
		}
	}
}
