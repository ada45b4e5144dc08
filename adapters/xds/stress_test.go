package xds_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/backoff"
)

var long = flag.Bool("long", false, "run the long xDS fault suite (make stress)")

// TestStressRestartsChurnAndFloods mixes, in random order from a logged
// seed: snapshots of random endpoint sets, management server stops and
// restarts, and channels closed and opened, while every channel picks.
// At the end one last snapshot must reach every open channel, and no
// goroutine may be left (TestMain's goleak). Short under make test; 1000
// steps under make stress (-args -long).
func TestStressRestartsChurnAndFloods(t *testing.T) {
	steps := 40
	if *long {
		steps = 1000
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	cp := startControlPlane(t)
	cluster := []*clusterv3.Cluster{clusterNamed("s")}
	at := func(set int) []*endpointv3.ClusterLoadAssignment {
		var addrs []string
		for i := range 20 {
			addrs = append(addrs, fmt.Sprintf("10.%d.0.%d:80", set%200, i+1))
		}
		return []*endpointv3.ClusterLoadAssignment{assignment("s", locality{Zone: "a", Weight: 1, Addrs: addrs})}
	}
	cp.set("0", cluster, at(0))
	fast := backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 50 * time.Millisecond}
	b := testBuilder(t, cp.addr, xds.WithBackoff(fast))
	ctx, cancel := context.WithCancel(context.Background()) // the pickers'
	defer cancel()

	type picker struct {
		ch   *conn.Channel
		stop chan struct{}
		done chan struct{}
	}
	open := func() *picker {
		ch, err := conn.New("xds-cluster:///s", conn.WithResolver(b), conn.WithDialer(standIn{}))
		if err != nil {
			t.Fatal(err)
		}
		p := &picker{ch: ch, stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(p.done)
			for {
				select {
				case <-p.stop:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, 10*time.Millisecond)
				r, err := ch.Pick(pctx, conn.PickOptions{WaitForReady: true})
				pcancel()
				if err == nil && r.Done != nil {
					r.Done(lbDoneInfo())
				}
			}
		}()
		return p
	}
	shut := func(p *picker) {
		close(p.stop)
		<-p.done
		p.ch.Close()
	}
	pickers := []*picker{open(), open(), open()}
	version, down, restarts, cycled := 0, false, 0, 0
	for range steps {
		switch k := rng.IntN(10); {
		case k < 6:
			version++
			cp.set(strconv.Itoa(version), cluster, at(version))
		case k < 8:
			if down {
				before := cp.streamCount()
				cp.restart()
				restarts++
				// Every restart is a reconnection: wait for the client's
				// new stream (its backoff runs on the real clock here).
				// The guard is per restart: a loaded machine slows the
				// long run as a whole, which is no hang.
				guard := time.Now().Add(hangGuard)
				for cp.streamCount() == before {
					if time.Now().After(guard) {
						t.Fatalf("no new stream after restart %d (seed %d)", restarts, seed)
					}
					time.Sleep(time.Millisecond)
				}
			} else {
				cp.stop()
			}
			down = !down
		default:
			i := rng.IntN(len(pickers))
			shut(pickers[i])
			pickers[i] = open()
			cycled++
		}
	}
	if down {
		cp.restart()
	}
	version++
	cp.set(strconv.Itoa(version), cluster, at(version))
	want := fmt.Sprintf("10.%d.0.", version%200)
	for i, p := range pickers {
		ctx := ctxFor(t)
		for {
			r, err := p.ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
			if err != nil {
				t.Fatalf("channel %d: %v (seed %d)", i, err, seed)
			}
			if strings.HasPrefix(r.SubConn.Address().Addr, want) {
				break
			}
			time.Sleep(time.Millisecond) // waiting for the last update, not a timer
		}
	}
	for _, p := range pickers {
		shut(p)
	}
	t.Logf("%d snapshots, %d server restarts, %d channels closed and opened, %d ADS streams; the last snapshot reached every channel",
		version, restarts, cycled, cp.streamCount())
}
