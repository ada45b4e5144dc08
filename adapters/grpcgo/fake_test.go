package grpcgo_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	estats "google.golang.org/grpc/experimental/stats"
	"google.golang.org/grpc/resolver"
)

// fakeCC is a grpc-go balancer.ClientConn for tests and benchmarks that need
// no network: NewSubConn returns fakeSubConns, and every published state is
// recorded (only the last one if lastOnly is set: a benchmark's set-up of
// n endpoints publishes O(n) pickers of O(n) each, too many to keep). Methods grpc-go may add later panic through the nil embedded
// interface, which is what grpc-go asks fakes to do.
type fakeCC struct {
	balancer.ClientConn

	mu         sync.Mutex
	subConns   []*fakeSubConn
	states     []balancer.State
	resolveNow int
	changed    chan struct{} // closed and replaced on every record
	lastOnly   bool          // set before use: keep the last state only
}

func newFakeCC() *fakeCC { return &fakeCC{changed: make(chan struct{})} }

func (c *fakeCC) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *fakeCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc := &fakeSubConn{id: len(c.subConns), addrs: addrs, listener: opts.StateListener}
	c.subConns = append(c.subConns, sc)
	c.notifyLocked()
	return sc, nil
}

func (c *fakeCC) UpdateState(s balancer.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastOnly {
		c.states = c.states[:0]
	}
	c.states = append(c.states, s)
	c.notifyLocked()
}

func (c *fakeCC) ResolveNow(resolver.ResolveNowOptions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resolveNow++
	c.notifyLocked()
}

func (c *fakeCC) Target() string                          { return "fake:///target" }
func (c *fakeCC) MetricsRecorder() estats.MetricsRecorder { return noopRecorder{} }
func (c *fakeCC) RemoveSubConn(sc balancer.SubConn)       { sc.Shutdown() }
func (c *fakeCC) UpdateAddresses(balancer.SubConn, []resolver.Address) {
	panic("fakeCC: UpdateAddresses is deprecated and unexpected")
}

// waitSubConns waits until the policy has created n SubConns.
func (c *fakeCC) waitSubConns(tb testing.TB, n int) {
	tb.Helper()
	timeout := time.After(hangGuard)
	for {
		c.mu.Lock()
		have, ch := len(c.subConns), c.changed
		c.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("fakeCC: %d SubConns, waiting for %d", have, n)
		}
	}
}

func (c *fakeCC) allSubConns() []*fakeSubConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*fakeSubConn(nil), c.subConns...)
}

// lastState returns the last published state, and false if none was.
func (c *fakeCC) lastState() (balancer.State, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.states) == 0 {
		return balancer.State{}, false
	}
	return c.states[len(c.states)-1], true
}

// waitForState waits until the last published state satisfies ok.
func (c *fakeCC) waitForState(tb testing.TB, ok func(balancer.State) bool) balancer.State {
	tb.Helper()
	timeout := time.After(hangGuard)
	for {
		c.mu.Lock()
		ch := c.changed
		var last balancer.State
		have := len(c.states) > 0
		if have {
			last = c.states[len(c.states)-1]
		}
		c.mu.Unlock()
		if have && ok(last) {
			return last
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("fakeCC: waiting for a state; last is %+v", last)
		}
	}
}

// readyAll moves every SubConn created so far through CONNECTING to READY
// (and reports it healthy if the policy registered a health listener).
func (c *fakeCC) readyAll() {
	for _, sc := range c.allSubConns() {
		sc.setState(connectivity.Connecting, nil)
		sc.setState(connectivity.Ready, nil)
		sc.reportHealthy()
	}
}

// fakeSubConn records what the policy asks of it; a test sets its state.
type fakeSubConn struct {
	balancer.SubConn

	id       int
	addrs    []resolver.Address
	listener func(balancer.SubConnState)

	mu       sync.Mutex
	connects int
	shutdown int
	health   func(balancer.SubConnState)
}

func (sc *fakeSubConn) String() string { return fmt.Sprintf("fakeSubConn(%d)", sc.id) }

func (sc *fakeSubConn) Connect() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.connects++
}

func (sc *fakeSubConn) Shutdown() {
	sc.mu.Lock()
	sc.shutdown++
	sc.mu.Unlock()
}

// RegisterHealthListener only records the listener: grpc-go calls it
// asynchronously, and policies may hold a lock while registering.
func (sc *fakeSubConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.health = l
}

func (sc *fakeSubConn) reportHealthy() {
	sc.mu.Lock()
	l := sc.health
	sc.mu.Unlock()
	if l != nil {
		l(balancer.SubConnState{ConnectivityState: connectivity.Ready})
	}
}

// setState delivers a state to the policy's listener, as grpc-go does from
// its serializer.
func (sc *fakeSubConn) setState(s connectivity.State, err error) {
	sc.listener(balancer.SubConnState{ConnectivityState: s, ConnectionError: err})
}

func (sc *fakeSubConn) counts() (connects, shutdowns int) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.connects, sc.shutdown
}

// noopRecorder discards metrics.
type noopRecorder struct{ estats.MetricsRecorder }

func (noopRecorder) RecordInt64Count(*estats.Int64CountHandle, int64, ...string)       {}
func (noopRecorder) RecordFloat64Count(*estats.Float64CountHandle, float64, ...string) {}
func (noopRecorder) RecordInt64Histo(*estats.Int64HistoHandle, int64, ...string)       {}
func (noopRecorder) RecordFloat64Histo(*estats.Float64HistoHandle, float64, ...string) {}
func (noopRecorder) RecordInt64Gauge(*estats.Int64GaugeHandle, int64, ...string)       {}
func (noopRecorder) RecordInt64UpDownCount(*estats.Int64UpDownCountHandle, int64, ...string) {
}
func (noopRecorder) RegisterAsyncReporter(estats.AsyncMetricReporter, ...estats.AsyncMetric) func() {
	return func() {}
}
