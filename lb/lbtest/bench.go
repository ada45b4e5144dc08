package lbtest

import (
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// BenchmarkPicks is the body of a picker benchmark: b.N requests as a
// channel makes them, each loading the current picker (p, from an
// atomic pointer as a channel holds it), picking with info, and calling
// the result's Done at once when it is set. With parallel the requests
// come from four goroutines per core (b.RunParallel), the case a shared
// lock would serialize; otherwise from one. It reports allocations. A
// pick that fails or returns no SubConn panics: a benchmark measures
// READY pickers only.
func BenchmarkPicks(b *testing.B, p lb.Picker, info lb.PickInfo, parallel bool) {
	var current atomic.Pointer[lb.Picker]
	current.Store(&p)
	b.ReportAllocs()
	if parallel {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				pickAndFinish(&current, info)
			}
		})
		return
	}
	for range b.N {
		pickAndFinish(&current, info)
	}
}

// pickAndFinish is one request of BenchmarkPicks.
func pickAndFinish(current *atomic.Pointer[lb.Picker], info lb.PickInfo) {
	r, err := (*current.Load()).Pick(info)
	if err != nil || r.SubConn == nil {
		panic("lbtest: BenchmarkPicks: pick failed")
	}
	if r.Done != nil {
		r.Done(lb.DoneInfo{})
	}
}
