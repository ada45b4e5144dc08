package conn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The per-endpoint counters are metrics too, labeled with the endpoint's
// address: requests sent (a request not sent does not count) and, of
// those, the failed ones. Counting them costs a request no allocation:
// Pick and Finish together allocate nothing on the READY path.
func TestEndpointMetricsAndNoAllocation(t *testing.T) {
	metrics := lbtest.NewMetrics()
	c, r, _ := newTestChannel(t, WithMetricsRecorder(metrics))
	srv := startServer(t)
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.Ready)
	finish(t, c, nil)
	finish(t, c, errors.New("HTTP 500"))
	finish(t, c, fmt.Errorf("not sent: %w", lb.ErrRequestNotSent))
	metrics.Want(t, 2, MetricEndpointRequests.Name, c.Target(), srv.addr)
	metrics.Want(t, 1, MetricEndpointFailures.Name, c.Target(), srv.addr)

	ctx := guard(t)
	fail := errors.New("HTTP 503")
	allocs := testing.AllocsPerRun(100, func() {
		res, err := c.Pick(ctx, PickOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res.Finish(lb.DoneInfo{Err: fail})
	})
	if allocs != 0 {
		t.Errorf("Pick and Finish allocate %v times per request, want 0", allocs)
	}
	metrics.Want(t, 2+101, MetricEndpointRequests.Name, c.Target(), srv.addr)
}
