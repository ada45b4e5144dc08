package dns_test

import (
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// TestPropertyPollFloorAndResolveNow drives a resolver whose lookups always
// succeed with random ResolveNow calls and clock advances, against a model
// written from the package documentation's text: after a resolution that
// started at s, the next one starts at s + poll interval, or at the first
// ResolveNow after s if that comes sooner, but never before s + floor;
// ResolveNow calls made while one waits for the floor coalesce into one
// resolution. Every lookup must come exactly when the model says.
func TestPropertyPollFloorAndResolveNow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		floor := time.Duration(rapid.IntRange(0, 5).Draw(t, "floor (s)")) * time.Second
		poll := floor + time.Duration(rapid.IntRange(0, 10).Draw(t, "poll - floor (s)"))*time.Second
		if poll == 0 {
			poll = time.Second
		}
		clk := clock.NewMock()
		stub := &stubLookup{clock: clk, respond: answer("10.0.0.1")}
		cc := &fakeCC{}
		b, err := dns.NewBuilder(dns.WithLookup(stub.lookup), dns.WithPollInterval(poll), dns.WithMinResolutionInterval(floor))
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Build(resolver.Target{Scheme: dns.Scheme, Endpoint: "a.test"}, cc, resolver.BuildOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()

		var (
			now, start time.Duration // the clock; the start of the last resolution
			pending    bool          // a ResolveNow waits for the floor
			want       = []time.Duration{0}
		)
		cc.NextState(t) // the first resolution, at 0
		resolved := func() {
			want = append(want, now)
			start, pending = now, false
			cc.NextState(t) // its timers are made: the clock may move
		}
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "ResolveNow") {
				r.ResolveNow()
				if now >= start+floor {
					resolved()
				} else {
					pending = true
				}
				continue
			}
			target := now + time.Duration(rapid.IntRange(1, 15).Draw(t, "advance (s)"))*time.Second
			for {
				next := start + poll
				if pending {
					next = start + floor
				}
				if next > target {
					break
				}
				clk.Add(next - now)
				now = next
				resolved()
			}
			clk.Add(target - now)
			now = target
		}
		r.Close()
		if _, times := stub.calls(); !slices.Equal(times, want) {
			t.Fatalf("lookups at %v, want %v (floor %v, poll %v)", times, want, floor, poll)
		}
	})
}
