package grpcgo_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	_ "google.golang.org/grpc/balancer/ringhash" // grpc-go's ring_hash_experimental

	"github.com/lbkit/lbkit/adapters/grpcgo"
)

// A client moving between grpc-go's ring_hash and lbkit's keeps its
// affinity: two grpc-go channels over the same eight real servers, one
// running grpc-go's own ring_hash_experimental and one running lbkit's
// through the adapter, both keyed by the same request header (gRFC A76),
// send each of 300 keys to the same server. Then one server stops, and both
// move exactly the same keys to the same new servers.
func TestRingHashPicksAsGrpcGo(t *testing.T) {
	var addrs []resolver.Address
	var backends []*backend
	for i := range 8 {
		b := startBackend(t, fmt.Sprintf("s%d", i))
		backends = append(backends, b)
		addrs = append(addrs, b.address())
	}
	state := resolver.State{Addresses: addrs}
	const cfg = `{"minRingSize": 64, "maxRingSize": 4096, "requestHashHeader": "x-key"}`
	theirs := newClient(t, state, `{"loadBalancingConfig":[{"ring_hash_experimental":`+cfg+`}]}`)
	ours := newClient(t, state, `{"loadBalancingConfig":[{"`+grpcgo.RingHashName+`":`+cfg+`}]}`)

	ask := func(c *client, key string) string {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "x-key", key)
		name, err := c.who(ctx, grpc.WaitForReady(true))
		if err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
		return name
	}
	compare := func(phase string) map[string]string {
		owners := map[string]string{}
		for k := range 300 {
			key := fmt.Sprintf("key-%d", k)
			got, want := ask(ours, key), ask(theirs, key)
			if got != want {
				t.Fatalf("%s: key %s went to %s with lbkit, %s with grpc-go", phase, key, got, want)
			}
			owners[key] = got
		}
		return owners
	}
	before := compare("all up")
	spread := map[string]bool{}
	for _, o := range before {
		spread[o] = true
	}
	if len(spread) < 6 {
		t.Fatalf("300 keys on %d of 8 servers", len(spread))
	}
	backends[3].stop()
	// An RPC sent on s3's connection as it closes fails (EOF, UNAVAILABLE)
	// in either channel before it learns s3 is gone; the comparison is of
	// where keys go once each has learnt it, so first each channel serves
	// one of s3's keys elsewhere.
	for key, was := range before {
		if was != "s3" {
			continue
		}
		for _, c := range []*client{ours, theirs} {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			for {
				name, err := c.who(metadata.AppendToOutgoingContext(ctx, "x-key", key), grpc.WaitForReady(true))
				if err == nil && name != "s3" {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("key %s: still no server but s3 after s3 stopped: %v", key, err)
				}
			}
			cancel()
		}
		break
	}
	after := compare("s3 stopped")
	for key, was := range before {
		if was != "s3" && after[key] != was {
			t.Fatalf("%s moved from %s to %s when only s3 stopped", key, was, after[key])
		}
	}
}
