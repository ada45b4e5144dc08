package conn

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
)

// modelDialer stands for a connection model at 100k endpoints without
// 100k sockets: "check" holds nothing (as TCPDialer does by default);
// "hold" keeps, per endpoint, a goroutine reading the connection (as
// TCPDialer{Hold: true} does) and gives the channel a Lost channel to
// watch. Sockets themselves (kernel memory, file descriptors) come on top
// for the held model.
type modelDialer struct{ hold bool }

func (d modelDialer) Dial(context.Context, resolver.Address) (Conn, error) {
	if !d.hold {
		return checkedConn{}, nil
	}
	c := &heldConn{lost: make(chan struct{}), closed: make(chan struct{}), done: make(chan struct{})}
	go c.read()
	return c, nil
}

type heldConn struct{ lost, closed, done chan struct{} }

func (c *heldConn) read() { // stands for probeConn's reader
	defer close(c.done)
	<-c.closed
}
func (c *heldConn) Lost() <-chan struct{} { return c.lost }
func (c *heldConn) Close() error          { close(c.closed); <-c.done; return nil }

// rssBytes returns the process's resident set size.
func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.Atoi(f[1])
	return float64(pages * os.Getpagesize())
}

// BenchmarkSteadyState: a channel running weighted_round_robin over n
// endpoints, all READY: goroutines and memory at steady state, per
// connection model, reported as metrics (process-RSS-MB is the whole test
// process's resident size after the build); the timed part is a fail-fast
// pick.
func BenchmarkSteadyState(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		for _, model := range []string{"check", "hold"} {
			b.Run(fmt.Sprintf("model=%s/n=%d", model, n), func(b *testing.B) {
				runtime.GC()
				g0 := runtime.NumGoroutine()
				var ms0 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				r := &testResolver{}
				c, err := New("test:///svc", WithResolver(r), WithDialer(modelDialer{hold: model == "hold"}),
					WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				as := make([]resolver.Address, n)
				for i := range as {
					as[i] = resolver.Address{Addr: fmt.Sprintf("10.%d.%d.%d:80", i>>16, (i>>8)&255, i&255)}
				}
				r.update(b, resolver.State{Addresses: as})
				c.Connect()
				for ctx := guard(b); ; {
					ready := 0
					for _, ok := range readyConns(c) {
						if ok {
							ready++
						}
					}
					if ready == n {
						break
					}
					if ctx.Err() != nil {
						b.Fatalf("%d of %d READY", ready, n)
					}
					runtime.Gosched()
				}
				settle(b, c)
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				goroutines, rss := runtime.NumGoroutine()-g0, rssBytes()
				b.ResetTimer()
				for range b.N {
					if _, err := c.Pick(context.Background(), PickOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(goroutines)/float64(n), "goroutines/endpoint")
				b.ReportMetric(float64(ms.HeapInuse+ms.StackInuse-ms0.HeapInuse-ms0.StackInuse)/float64(n), "heap+stack-B/endpoint")
				b.ReportMetric(rss/(1<<20), "process-RSS-MB")
			})
		}
	}
}
