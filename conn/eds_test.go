package conn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// An assignment that leaves every priority without endpoints makes picks
// fail with the reason and the place, not only with the priority
// policy's "empty priority list" (issue 17). The reason travels with the
// empty state (resolver.State.Degraded), so even the first fail-fast pick,
// issued right after conn.New and served by the first picker the tree
// publishes, names it: repeated, no pick ever sees the bare message
// (issue 32; before, about 1 run in 5 did).
func TestEDSEmptyTreePickErrorNamesTheReason(t *testing.T) {
	const runs = 200
	for _, tc := range []struct {
		name, cla, want string
	}{
		{"locality without weight",
			`{"cluster_name":"c","endpoints":[{"locality":{"zone":"a"},"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`,
			`priority 0 has no locality with a load_balancing_weight and an endpoint UNKNOWN or HEALTHY (endpoints[0] (locality "/a/", priority 0): no load_balancing_weight)`},
		{"no healthy endpoint",
			`{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"lb_endpoints":[{"health_status":"DRAINING","endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`,
			`endpoints[0] (locality "//", priority 0): no endpoint with health_status UNKNOWN or HEALTHY`},
		{"no endpoints", `{"cluster_name":"c"}`, "the assignment has no endpoints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cla.json")
			if err := os.WriteFile(file, []byte(tc.cla), 0o600); err != nil {
				t.Fatal(err)
			}
			want := "priority policy has empty priority list: eds: file " + file + ": no usable endpoint: "
			for i := range runs {
				ch, err := conn.New("eds://"+file, conn.WithResolver(&eds.Builder{}))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
				_, err = ch.Pick(ctx, conn.PickOptions{})
				cancel()
				ch.Close()
				if err == nil {
					t.Fatal("pick succeeded with no usable endpoint")
				}
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("run %d of %d: the first pick failed with %q; want it to name %q", i+1, runs, err, tc.want)
				}
			}
		})
	}
}

// checkingBuilder is the eds builder whose resolvers report through
// checkingCC.
type checkingBuilder struct {
	*eds.Builder
	cc *checkingCC
}

func (b *checkingBuilder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	b.cc.ClientConn = cc
	return b.Builder.Build(target, b.cc, opts)
}

// checkingCC runs check just before and just after each call the resolver
// makes to the channel, and signals each State on published.
type checkingCC struct {
	resolver.ClientConn
	check     func(when string)
	published chan struct{}
}

func (c *checkingCC) UpdateState(s resolver.State) error {
	c.check("before the channel hears of a state")
	err := c.ClientConn.UpdateState(s)
	c.check("after the resolver published a state")
	c.published <- struct{}{}
	return err
}

func (c *checkingCC) ReportError(err error) {
	c.check("before the channel hears of an error")
	c.ClientConn.ReportError(err)
	c.check("after the resolver reported an error")
}

// The snapshot shows an empty tree's reason on the resolver and on the
// policy node together: at every moment, including the instants right
// before and right after the resolver hands the channel a state (when,
// before issue 32, the resolver described the reason the tree did not yet
// have), either both have it or neither does.
func TestSnapshotShowsTheEmptyTreesReasonOnResolverAndPolicyTogether(t *testing.T) {
	const (
		empty  = `{"cluster_name":"c","endpoints":[{"locality":{"zone":"a"},"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`
		good   = `{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"locality":{"zone":"a"},"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`
		reason = "no usable endpoint: priority 0 has no locality with a load_balancing_weight"
	)
	file := filepath.Join(t.TempDir(), "cla.json")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(empty)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
	defer cancel()
	var ch *conn.Channel
	shows := func() (onResolver, onPolicy bool) {
		s, err := ch.Snapshot(ctx)
		if err != nil {
			t.Errorf("snapshot: %v", err)
			return false, false
		}
		if s.Resolver != nil {
			onResolver = strings.Contains(s.Resolver.LastError, reason)
		}
		if s.Balancer != nil {
			onPolicy = strings.Contains(s.Balancer.LastError, reason)
		}
		return onResolver, onPolicy
	}
	cc := &checkingCC{published: make(chan struct{}, 1), check: func(when string) {
		if r, p := shows(); r != p {
			t.Errorf("%s: the reason is on the resolver: %v, on the policy node: %v", when, r, p)
		}
	}}
	edsBuilder, err := eds.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	ch, err = conn.New("eds://"+file, conn.WithClock(clk), conn.WithResolver(&checkingBuilder{Builder: edsBuilder, cc: cc}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.Connect()
	next := func(wantReason bool) {
		t.Helper()
		select {
		case <-cc.published:
		case <-ctx.Done():
			t.Fatal("the resolver published nothing")
		}
		if err := ch.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		if r, p := shows(); r != wantReason || p != wantReason {
			t.Fatalf("once applied, the reason is on the resolver: %v, on the policy node: %v; want %v on both", r, p, wantReason)
		}
	}
	next(true)
	for range 3 {
		write(good)
		clk.Add(eds.DefaultPollInterval)
		next(false)
		write(empty)
		clk.Add(eds.DefaultPollInterval)
		next(true)
	}
}
