package nethttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/internal/dnstest"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// rollingBackend is a real HTTP server on one loopback IP that counts the
// requests it gets and those in flight, and stops gracefully.
type rollingBackend struct {
	ip       netip.Addr
	addr     string
	srv      *http.Server
	done     chan struct{}
	served   atomic.Int64
	inFlight atomic.Int64
	maxSeq   atomic.Int64 // the highest X-Seq header of a request it served
}

// startRollingBackend serves on ln.
func startRollingBackend(ln net.Listener) *rollingBackend {
	b := &rollingBackend{addr: ln.Addr().String(), done: make(chan struct{})}
	b.ip = netip.MustParseAddrPort(b.addr).Addr()
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.inFlight.Add(1)
		defer b.inFlight.Add(-1)
		b.served.Add(1)
		if n, err := strconv.ParseInt(r.Header.Get("X-Seq"), 10, 64); err == nil {
			for old := b.maxSeq.Load(); n > old && !b.maxSeq.CompareAndSwap(old, n); old = b.maxSeq.Load() {
			}
		}
		time.Sleep(200 * time.Microsecond) // some work, so requests overlap the steps
		_, _ = io.WriteString(w, b.addr)
	})}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln)
	}()
	return b
}

// stop shuts b down gracefully: it waits for the requests in flight.
func (b *rollingBackend) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard only
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		t.Errorf("stopping %s: %v", b.addr, err)
	}
	<-b.done
}

// endpointsOf returns the addresses of every leaf endpoint of n's tree.
func endpointsOf(n *lb.Node) []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, e := range n.Endpoints {
		out = append(out, e.Address)
	}
	for i := range n.Children {
		out = append(out, endpointsOf(&n.Children[i])...)
	}
	return out
}

// eventually polls cond in real time, as the work it waits for (lookups
// on a real DNS server, connections to real servers) runs on real time;
// the bound only guards against a hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRollingRestartBehindDNS: four real HTTP backends behind a dns:
// target served by the test's DNS server, replaced one by one under steady
// load: each old backend is removed from DNS, drained (the channel drops
// it one poll interval later and its requests in flight finish), then
// stopped; its replacement starts at a new address and is added to DNS.
// No request fails, every replacement takes traffic one poll interval
// after DNS names it, and no request picked after a backend was dropped
// reaches it (each request carries its number, and each backend keeps the
// highest it served). The poll runs on a mock clock that the test
// advances, so the test waits for nothing but real I/O.
func TestRollingRestartBehindDNS(t *testing.T) { rollingRestart(t, false) }

// TestRollingRestartBehindDNSStopFirst is the same restart in issue 27's
// order: stop one backend while DNS and the channel still name it (a
// graceful shutdown: its requests in flight finish, its connections
// close), start its replacement at a new address, update DNS (the old one
// out, the new one in), repeat. The GETs (idempotent) that the channel
// still sends to the stopped backend before it sees the loss are retried
// on another: no request fails, and every replacement takes traffic one
// poll interval after DNS names it.
func TestRollingRestartBehindDNSStopFirst(t *testing.T) { rollingRestart(t, true) }

// rollingRestart runs the restart: drain first (remove from DNS, wait one
// poll and for the requests in flight, stop), or, with stopFirst, stop
// first and then update DNS.
func rollingRestart(t *testing.T, stopFirst bool) {
	const poll = 10 * time.Second
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := netip.MustParseAddrPort(first.Addr().String()).Port()
	listen := func(ip string) net.Listener {
		if ip == "127.0.0.1" {
			return first
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(netip.MustParseAddr(ip), port).String())
		if err != nil {
			t.Fatalf("listening on %s port %d: %v", ip, port, err)
		}
		return ln
	}
	var live []*rollingBackend
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		live = append(live, startRollingBackend(listen(ip)))
	}
	defer func() {
		for _, b := range live {
			b.stop(t)
		}
	}()
	ips := func() []netip.Addr {
		out := make([]netip.Addr, len(live))
		for i, b := range live {
			out[i] = b.ip
		}
		return out
	}

	dnsServer, err := dnstest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer dnsServer.Close()
	dnsServer.Set("svc.test", ips()...)

	clk := clock.NewMock()
	b, err := dns.NewBuilder(dns.WithPollInterval(poll), dns.WithMinResolutionInterval(poll))
	if err != nil {
		t.Fatal(err)
	}
	ch, client := channelClient(t, fmt.Sprintf("dns://%s/svc.test:%d", dnsServer.Addr(), port), conn.WithResolver(b), conn.WithClock(clk),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))

	// Steady load: four clients sending GETs back to back. Each request
	// takes a number when it starts, and each client shows the number of
	// the request it has in flight (0 for none), so the test can wait for
	// every request that started before a moment to end.
	var (
		sent     atomic.Int64
		current  [4]atomic.Int64
		failedMu sync.Mutex
		failed   []error
	)
	ctx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for i := range current {
		load.Add(1)
		go func() {
			defer load.Done()
			defer current[i].Store(0)
			for ctx.Err() == nil {
				current[i].Store(sent.Add(1))
				reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				req, _ := http.NewRequestWithContext(reqCtx, http.MethodGet, "http://svc/", nil)
				req.Header.Set("X-Seq", strconv.FormatInt(current[i].Load(), 10))
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
				current[i].Store(0)
				if err != nil && ctx.Err() == nil {
					failedMu.Lock()
					failed = append(failed, err)
					failedMu.Unlock()
				}
			}
		}()
	}
	defer func() { stopLoad(); load.Wait() }()

	snapshotEndpoints := func() []string {
		s, err := ch.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return endpointsOf(s.Balancer)
	}
	eventually(t, "the four backends take traffic", func() bool {
		return !slices.ContainsFunc(live, func(b *rollingBackend) bool { return b.served.Load() == 0 })
	})

	type drained struct {
		b      *rollingBackend
		served int64 // requests it had served when it was drained
		picked int64 // the number of the last request picked before its drop
	}
	var gone []drained
	for round := range 4 {
		old := live[0]
		live = live[1:]
		if stopFirst {
			// Stop it while DNS and the channel still name it; start its
			// replacement; then one DNS update swaps them.
			old.stop(t)
			gone = append(gone, drained{old, old.served.Load(), sent.Load()})
			nb := startRollingBackend(listen(fmt.Sprintf("127.0.0.%d", 11+round)))
			live = append(live, nb)
			dnsServer.Set("svc.test", ips()...)
			clk.Add(poll)
			eventually(t, nb.addr+" takes traffic within one poll interval of being named in DNS", func() bool { return nb.served.Load() > 0 })
			eventually(t, "the channel drops "+old.addr, func() bool { return !slices.Contains(snapshotEndpoints(), old.addr) })
			continue
		}
		// Remove the old backend from DNS; one poll later the channel
		// drops it, and its requests in flight finish.
		dnsServer.Set("svc.test", ips()...)
		clk.Add(poll)
		eventually(t, "the channel drops "+old.addr, func() bool { return !slices.Contains(snapshotEndpoints(), old.addr) })
		// Every request picked before the drop ends; the later ones were
		// picked without the old backend.
		dropped := sent.Load()
		eventually(t, "the requests picked before "+old.addr+" was dropped end", func() bool {
			for i := range current {
				if n := current[i].Load(); n != 0 && n <= dropped {
					return false
				}
			}
			return true
		})
		if n := old.inFlight.Load(); n != 0 {
			t.Errorf("%s has %d requests in flight once every request picked before its drop ended", old.addr, n)
		}
		gone = append(gone, drained{old, old.served.Load(), dropped})
		old.stop(t)

		// Its replacement, at a new address, takes traffic one poll after
		// DNS names it.
		nb := startRollingBackend(listen(fmt.Sprintf("127.0.0.%d", 11+round)))
		live = append(live, nb)
		dnsServer.Set("svc.test", ips()...)
		clk.Add(poll)
		eventually(t, nb.addr+" takes traffic within one poll interval of being named in DNS", func() bool { return nb.served.Load() > 0 })
	}
	before := sent.Load()
	eventually(t, "more requests after the last replacement", func() bool { return sent.Load() > before+100 })
	stopLoad()
	load.Wait()

	failedMu.Lock()
	defer failedMu.Unlock()
	if len(failed) > 0 {
		t.Errorf("%d of %d requests failed; first: %v", len(failed), sent.Load(), errors.Join(failed[:min(3, len(failed))]...))
	}
	for _, d := range gone {
		if n := d.b.served.Load(); n != d.served {
			t.Errorf("%s served %d requests after it was drained", d.b.addr, n-d.served)
		}
		if n := d.b.maxSeq.Load(); n > d.picked {
			t.Errorf("%s served request %d, started after it was dropped (the last before: %d)", d.b.addr, n, d.picked)
		}
	}
	for _, b := range live {
		if b.served.Load() == 0 {
			t.Errorf("replacement %s took no traffic", b.addr)
		}
	}
	t.Logf("%d requests, %d failed; backends replaced: 4 (stop first: %v)", sent.Load(), len(failed), stopFirst)
}

// TestDNSOutageKeepsServingAndTheSnapshotSaysWhy: issue 27's bad input at
// the channel. A dns: target's server that answers garbage, never answers,
// or answers with no address leaves the channel on its last good
// addresses (requests keep reaching the real backend) and the channel's
// snapshot says why, until the server answers again.
func TestDNSOutageKeepsServingAndTheSnapshotSaysWhy(t *testing.T) {
	const poll = 10 * time.Second
	for _, tc := range []struct {
		name    string
		breakIt func(*dnstest.Server)
		want    string
	}{
		{"garbage", func(s *dnstest.Server) { s.SetMode(dnstest.Garbage) }, "cannot unmarshal DNS message"},
		{"silent", func(s *dnstest.Server) { s.SetMode(dnstest.Silent) }, "lookup timed out"},
		{"empty", func(s *dnstest.Server) { s.Set("svc.test") }, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			backend := startRollingBackend(ln)
			defer backend.stop(t)
			port := netip.MustParseAddrPort(backend.addr).Port()
			dnsServer, err := dnstest.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer dnsServer.Close()
			dnsServer.Set("svc.test", backend.ip)
			clk := clock.NewMock()
			b, err := dns.NewBuilder(dns.WithPollInterval(poll), dns.WithMinResolutionInterval(poll), dns.WithLookupTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ch, client := channelClient(t, fmt.Sprintf("dns://%s/svc.test:%d", dnsServer.Addr(), port), conn.WithResolver(b), conn.WithClock(clk),
				conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
			snapshot := func() conn.Snapshot {
				s, err := ch.Snapshot(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			if got := get(t, client, "http://svc/"); got != backend.addr {
				t.Fatalf("served by %q, want %s", got, backend.addr)
			}

			asked := len(dnsServer.Queries())
			tc.breakIt(dnsServer)
			clk.Add(poll)
			if tc.name == "silent" {
				eventually(t, "the poll's question reaches the server", func() bool { return len(dnsServer.Queries()) > asked })
				clk.Add(2 * time.Second) // the lookup timeout
			}
			eventually(t, "the snapshot says why the addresses are stale", func() bool {
				s := snapshot()
				return s.Resolver != nil && strings.Contains(s.Resolver.LastError, tc.want) &&
					strings.Contains(s.Resolver.LastError, "keeping the last good addresses")
			})
			if eps := endpointsOf(snapshot().Balancer); !slices.Equal(eps, []string{backend.addr}) {
				t.Errorf("endpoints %v during the outage, want the last good %s", eps, backend.addr)
			}
			before := backend.served.Load()
			for range 10 {
				if got := get(t, client, "http://svc/"); got != backend.addr {
					t.Fatalf("served by %q during the outage, want %s", got, backend.addr)
				}
			}
			if n := backend.served.Load() - before; n != 10 {
				t.Errorf("the backend served %d of 10 requests during the outage", n)
			}

			dnsServer.SetMode(dnstest.Answer)
			dnsServer.Set("svc.test", backend.ip)
			clk.Add(2 * time.Second) // the retry after backoff (1 s ±20%)
			eventually(t, "the snapshot's error clears after a good answer", func() bool {
				s := snapshot()
				return s.Resolver != nil && s.Resolver.LastError == ""
			})
		})
	}
}
