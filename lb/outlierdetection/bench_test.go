package outlierdetection

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// BenchmarkPick measures a pick and its Done through outlier detection
// (counting, and not counting when no algorithm is configured) against the
// round-robin test leaf's picker alone, in the same run. Pickers are loaded
// through an atomic.Pointer and called through lb.Picker from every core,
// as the channel calls them. See docs/performance.md.
func BenchmarkPick(b *testing.B) {
	counting := newEnv(b)
	counting.update(`{"failurePercentageEjection": {}, "childPolicy": [{"test_leaf": {}}]}`, five...)
	plain := newEnv(b)
	plain.update(`{"childPolicy": [{"test_leaf": {}}]}`, five...)
	odPicker := counting.h.State().Picker
	info := lb.PickInfo{Ctx: context.Background()}
	for _, impl := range []struct {
		name   string
		picker lb.Picker
	}{
		{"leaf-baseline", odPicker.(*picker).child},
		{"outlier-detection-counting", odPicker},
		{"outlier-detection-off", plain.h.State().Picker},
	} {
		var current atomic.Pointer[lb.Picker]
		current.Store(&impl.picker)
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := (*current.Load()).Pick(info)
					if err != nil {
						panic(err)
					}
					if r.Done != nil {
						r.Done(lb.DoneInfo{})
					}
				}
			})
		})
	}
}
