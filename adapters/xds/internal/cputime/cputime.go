// Package cputime measures the CPU time a benchmark's process spends, for
// the xDS benchmarks on a shared machine: a loaded machine stretches wall
// time by taking the cores away, but not the CPU time the work needs (its
// garbage collection, on whatever thread, included).
package cputime

import (
	"testing"
	"time"
)

// Meter is the process's CPU time at a start.
type Meter struct{ start time.Duration }

// Start returns a meter from now; call it just before the benchmark loop.
func Start() Meter { return Meter{start: process()} }

// Report reports the process's CPU time since m's start per iteration of
// b, as "cpu-ns/op"; where the platform has no such clock it reports
// nothing. Call it after the loop.
func (m Meter) Report(b *testing.B) {
	end := process()
	if end == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(end-m.start)/float64(b.N), "cpu-ns/op")
}
