package clusterimpl

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// BenchmarkPick measures a pick and its Done through
// xds_cluster_impl_experimental (a limit; a limit and a drop category of
// 1 per million; a limit over a child whose picks have a Done, chained
// from the free list) against the child's picker alone, in the same run,
// from every core as the channel calls pickers. See docs/performance.md.
func BenchmarkPick(b *testing.B) {
	limited := newEnv(b, 1).ready(`{"maxConcurrentRequests": 1000000, "childPolicy": [{"test_leaf": {}}]}`)
	dropping := newEnv(b, 1).ready(`{"maxConcurrentRequests": 1000000, "dropCategories": [{"category": "x", "requestsPerMillion": 1}], "childPolicy": [{"test_leaf": {}}]}`)
	leaf := limited.(*picker).child
	done := func(lb.DoneInfo) {}
	withDone := pickerFunc(func(i lb.PickInfo) (lb.PickResult, error) {
		r, err := leaf.Pick(i)
		r.Done = done
		return r, err
	})
	chained := limitedPicker(withDone, NewCounter(), 1000000)
	info := lb.PickInfo{Ctx: context.Background()}
	for _, impl := range []struct {
		name   string
		picker lb.Picker
	}{
		{"leaf-baseline", leaf},
		{"limit", limited},
		{"limit-and-drops", dropping},
		{"leaf-with-done-baseline", withDone},
		{"limit-chaining-done", chained},
	} {
		var current atomic.Pointer[lb.Picker]
		current.Store(&impl.picker)
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := (*current.Load()).Pick(info)
					if err == nil && r.Done != nil {
						r.Done(lb.DoneInfo{})
					}
				}
			})
		})
	}
}
