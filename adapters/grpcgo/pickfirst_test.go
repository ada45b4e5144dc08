package grpcgo_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

const pickFirstConfig = `{"loadBalancingConfig": [{"lbkit_pick_first": {}}]}`

func TestPickFirst(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	c := newClient(t, resolver.State{Addresses: []resolver.Address{a.address(), b.address()}}, pickFirstConfig)

	if got := c.count(t, 20); got["a"] != 20 {
		t.Fatalf("with both servers up: got %v, want every RPC on a", got)
	}

	// The first server stops: the connection is lost, pick_first goes IDLE,
	// and the next RPCs make it reconnect from the first address, which
	// fails, then the second.
	a.stop()
	c.waitUntilServed(t, "b")
	if got := c.count(t, 20); got["b"] != 20 {
		t.Fatalf("after a stopped: got %v, want every RPC on b", got)
	}

	// Every server stops: pick_first goes IDLE; the next RPC makes it
	// reconnect, it fails both addresses, reports TRANSIENT_FAILURE, and
	// fails RPCs that are not wait-for-ready at once with UNAVAILABLE.
	log := watchStates(t, c)
	b.stop()
	c.waitForState(t, connectivity.Idle)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := c.who(ctx); status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC that leaves IDLE with every server down: got %v, want code Unavailable", err)
	}
	c.waitForState(t, connectivity.TransientFailure)
	start := time.Now()
	_, err := c.who(ctx)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC in TRANSIENT_FAILURE: got %v, want code Unavailable", err)
	}
	if elapsed := time.Since(start); elapsed > hangGuard/2 {
		t.Errorf("failing RPC took %v; it should fail at once, not wait", elapsed)
	}

	// Sticky TRANSIENT_FAILURE: while pick_first keeps reconnecting (two
	// more attempts per address), the channel never leaves
	// TRANSIENT_FAILURE.
	from := log.waitLast(t, connectivity.TransientFailure)
	c.dials.waitFor(t, c.dials.count()+4)
	// grpc-go reports only changes, so any entry after the first is a
	// state the channel went through, however briefly.
	if got := log.since(from); len(got) != 1 {
		t.Fatalf("while reconnecting the channel went through %v, want only TRANSIENT_FAILURE", got)
	}

	// One server comes back: RPCs succeed on it.
	a.restart()
	c.waitForState(t, connectivity.Ready)
	if got := c.count(t, 20); got["a"] != 20 {
		t.Fatalf("after a restarted: got %v, want every RPC on a", got)
	}
}
