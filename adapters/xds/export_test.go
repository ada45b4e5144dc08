package xds

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/resolver"
)

// DecodeEndpoints exposes the EDS decoder to the package's benchmarks.
var DecodeEndpoints = decodeEndpoints

// hangGuard bounds the waits below; no test waits on it to pass.
const hangGuard = 20 * time.Second

// SerializerOf returns the serializer of the client r uses, for
// lbtest.AdvanceSerializers: the client's timers (does-not-exist,
// reconnection backoff) are its timers.
func SerializerOf(r resolver.Resolver) *lb.Serializer { return clientOf(r).ser }

// clientOf returns the client r uses.
func clientOf(r resolver.Resolver) *client {
	if lr, ok := r.(*listenerResolver); ok {
		return lr.c
	}
	return r.(*xdsResolver).c
}

// Sync is a barrier: it returns once r's client has run everything it was
// handed before the call (responses received, stream events, callbacks).
func Sync(tb testing.TB, r resolver.Resolver) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := SerializerOf(r).Run(ctx, func() {}); err != nil {
		tb.Fatalf("xds: Sync: %v", err)
	}
}

// ClientView is what a test can see of a client's state, read inside its
// serializer. Live, Connecting and Retries are about the first server.
type ClientView struct {
	// Source is the index of the server whose resources are used, and
	// InUse those of the servers streamed to or waited for.
	Source int
	InUse  []int
	// Live is true while a stream is up.
	Live bool
	// Connecting is true while a stream is being made or is up: false
	// only while a backoff runs (or the client is closing).
	Connecting bool
	// Retries is how many streams in a row ended without a response:
	// the attempt whose backoff is pending.
	Retries int
	// Waiting lists the resources whose does-not-exist timer runs, as
	// "kind/name", sorted.
	Waiting []string
}

func (c *client) view() ClientView {
	first := c.conns[0]
	v := ClientView{Live: first.live, Connecting: first.stream != nil, Retries: first.retries, Source: c.source}
	for _, sc := range c.conns {
		if sc.inUse() {
			v.InUse = append(v.InUse, sc.index)
		}
	}
	for _, ts := range c.types {
		for name, r := range ts.resources {
			if r.timer != nil {
				v.Waiting = append(v.Waiting, ts.rt.kind+"/"+name)
			}
		}
	}
	slices.Sort(v.Waiting)
	return v
}

// WaitClient waits until cond holds for the state of r's client, and
// returns that state. Events reach the client from its stream's
// goroutines (a server that stops, a request sent), so it looks again
// every millisecond: how often it looks changes nothing but when it sees.
func WaitClient(tb testing.TB, r resolver.Resolver, cond func(ClientView) bool) ClientView {
	tb.Helper()
	c := clientOf(r)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		var v ClientView
		if err := c.ser.Run(ctx, func() { v = c.view() }); err != nil {
			tb.Fatalf("xds: WaitClient: %v", err)
		}
		if cond(v) {
			return v
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			tb.Fatalf("xds: WaitClient: the client's state stays %+v", v)
		}
	}
}

// CounterOf returns the process-wide counter of requests in flight r
// gives cluster's tree: the cluster resolver's own, or a listener
// resolver's for one of its clusters (nil if it follows none such).
func CounterOf(tb testing.TB, r resolver.Resolver, cluster string) *clusterimpl.Counter {
	tb.Helper()
	var c *clusterimpl.Counter
	Sync(tb, r)
	if err := SerializerOf(r).Run(context.Background(), func() {
		switch r := r.(type) {
		case *listenerResolver:
			c = r.counters[cluster]
		case *xdsResolver:
			c = r.counter
		}
	}); err != nil {
		tb.Fatal(err)
	}
	return c
}
