package conn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The channel counts connection state changes, health verdict changes and
// failed picks by reason, each exactly when it happens on the mock clock.
func TestMetricsStateHealthAndFailedPicks(t *testing.T) {
	const interval = 10 * time.Second
	metrics := lbtest.NewMetrics()
	e := newHealthEnv(t, HealthCheck{Interval: interval, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1, Jitter: -1},
		WithMetricsRecorder(metrics))
	target := e.c.Target()
	e.start()
	e.waitCall()
	metrics.Want(t, 1, MetricSubConnStateChanges.Name, target, "CONNECTING")
	metrics.Want(t, 1, MetricSubConnStateChanges.Name, target, "READY")
	metrics.Want(t, 0, MetricHealthTransitions.Name, target, "passing")
	e.answer(nil)
	metrics.Want(t, 1, MetricHealthTransitions.Name, target, "passing")

	advance(t, e.c, e.m, interval-time.Nanosecond)
	metrics.Want(t, 0, MetricHealthTransitions.Name, target, "failing")
	advance(t, e.c, e.m, time.Nanosecond)
	e.check(errors.New("unhealthy"))
	metrics.Want(t, 1, MetricHealthTransitions.Name, target, "failing")
	e.want(lb.TransientFailure, "1 failure, threshold 1")

}

// Failed picks are counted by reason: a policy in TRANSIENT_FAILURE, a
// wait-for-ready pick whose context ends, and a drop (the channel closed).
func TestMetricsFailedPicksByReason(t *testing.T) {
	metrics := lbtest.NewMetrics()
	c, r, _ := newTestChannel(t, WithMetricsRecorder(metrics))
	target := c.Target()
	srv := startServer(t)
	srv.stop() // connections are refused at once
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.TransientFailure)

	if _, err := c.Pick(guard(t), PickOptions{}); err == nil {
		t.Fatal("picked in TRANSIENT_FAILURE")
	}
	metrics.Want(t, 1, MetricFailedPicks.Name, target, "transient_failure")

	ctx, cancel := context.WithCancel(guard(t))
	cancel()
	if _, err := c.Pick(ctx, PickOptions{WaitForReady: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait-for-ready pick with an ended context: %v, want context.Canceled", err)
	}
	metrics.Want(t, 1, MetricFailedPicks.Name, target, "deadline")

	c.Close()
	if _, err := c.Pick(guard(t), PickOptions{WaitForReady: true}); !errors.Is(err, ErrClosed) {
		t.Fatalf("pick on a closed channel: %v, want ErrClosed", err)
	}
	metrics.Want(t, 1, MetricFailedPicks.Name, target, "dropped")
	metrics.Want(t, 1, MetricFailedPicks.Name, target, "transient_failure")
}
