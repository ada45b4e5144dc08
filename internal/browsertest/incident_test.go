package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// outlierConfig ejects, every second, a backend with at least 5 requests of
// which half failed, for 30 s; round_robin below.
const outlierConfig = `{"loadBalancingConfig":[{"outlier_detection_experimental":{
  "interval":"1s","baseEjectionTime":"30s","maxEjectionPercent":50,
  "failurePercentageEjection":{"threshold":50,"minimumHosts":1,"requestVolume":5},
  "childPolicy":[{"round_robin":{}}]}}]}`

// During an incident an SRE opening the page sees what happened and when:
// three real backends behind outlier detection and health checks, one
// answering 503 (ejected: the page says until when, with its requests,
// failures and failure rate) and one failing its health check (the page
// shows the check's result and time, and its error in red); the channel's
// state with its start time and the config in use with its source.
func TestDebugPageShowsAnIncident(t *testing.T) {
	browser := chromium(t)
	ok, failing, sick := httpbackend.New(t, "ok"), httpbackend.New(t, "failing"), httpbackend.New(t, "sick")
	failing.SetFailing(true)
	http200 := conn.HTTPHealthCheck{Path: "/healthz"}
	checker := conn.HealthCheckFunc(func(ctx context.Context, a resolver.Address, svc string) error {
		if a.Addr == sick.Addr() {
			return errors.New("sick: database unreachable")
		}
		return http200.Check(ctx, a, svc)
	})
	r := manual.NewBuilder("test", manual.WithInitialState(resolver.State{Addresses: []resolver.Address{
		{Addr: ok.Addr()}, {Addr: failing.Addr()}, {Addr: sick.Addr()}}}))
	ch, err := conn.New("test:///incident", conn.WithResolver(r), conn.WithDefaultServiceConfig(outlierConfig),
		conn.WithHealthCheck(conn.HealthCheck{Checker: checker, Interval: 200 * time.Millisecond, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	// Traffic until the failing backend is ejected: round_robin sends
	// half of it there, and the sweep runs every second.
	deadline := time.Now().Add(30 * time.Second)
	for !ejected(t, ch, failing.Addr()) {
		if time.Now().After(deadline) {
			t.Fatalf("the failing backend was not ejected in 30 s")
		}
		for range 10 {
			resp, err := client.Get("http://incident/")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}

	page := httptest.NewServer(debugpage.New(ch))
	t.Cleanup(page.Close)
	// What the page must show, read from the snapshot the JSON serves.
	snap := fetchSnapshot(t, page.URL)
	eps := map[string]lb.Endpoint{}
	collect(snap.Balancer, eps)
	bad := eps[failing.Addr()]
	if bad.EjectedUntil == nil || bad.StateSince == nil || bad.Failures == 0 || bad.FailureRate == nil || *bad.FailureRate != 1 {
		t.Fatalf("the failing backend in the snapshot: %+v, want ejected with an end, failures, failure rate 100%%", bad)
	}

	ctx := openPage(t, browser, page.URL)
	row := func(b interface{ Addr() string }, role string) string {
		return `tr[data-address="` + b.Addr() + `"] [data-role="` + role + `"]`
	}
	waitForText(t, ctx, `[data-role="channel-since"]`, "since ")
	waitForText(t, ctx, `[data-role="config-source"]`, "option, policy outlier_detection_experimental")
	waitForText(t, ctx, `[data-role="service-config"]`, `"baseEjectionTime":"30s"`)
	// The end is the sweep after the ejection time; each sweep's lateness
	// on the real clock moves it by that much, hence the tolerance.
	waitFor(t, ctx, row(failing, "ejected-until"), "the ejection's end, near "+bad.EjectedUntil.Format("15:04:05.000"), func(text string) bool {
		end, err := time.ParseInLocation("15:04:05.000", text, bad.EjectedUntil.Location())
		if err != nil {
			return false
		}
		y, m, d := bad.EjectedUntil.Date()
		end = end.AddDate(y, int(m)-1, d-1)
		return end.Sub(*bad.EjectedUntil).Abs() < 2*time.Second
	})
	waitForText(t, ctx, row(failing, "failure-rate"), "100.0%")
	waitForText(t, ctx, row(failing, "state-since"), "since "+bad.StateSince.Format("15:04:05.000"))
	waitForText(t, ctx, row(failing, "failures"), itoa(bad.Failures))
	waitForText(t, ctx, row(failing, "requests"), itoa(bad.Requests))
	waitForText(t, ctx, row(ok, "failure-rate"), "0.0%")
	waitForText(t, ctx, row(ok, "ejected-until"), "–")
	waitForText(t, ctx, row(sick, "health"), "failing")
	waitForText(t, ctx, row(sick, "health"), "failed at ")
	waitForText(t, ctx, row(sick, "error"), "sick: database unreachable")
	waitForText(t, ctx, row(sick, "failure-rate"), "–")
	waitForText(t, ctx, row(sick, "state-since"), "since ")
	waitForText(t, ctx, row(ok, "health"), "passed at ")
	waitForText(t, ctx, row(ok, "error"), "–")
	screenshot(t, ctx, "incident")
}

// ejected reports whether the channel's snapshot shows addr ejected.
func ejected(t *testing.T, ch *conn.Channel, addr string) bool {
	t.Helper()
	s, err := ch.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eps := map[string]lb.Endpoint{}
	collect(s.Balancer, eps)
	return eps[addr].Ejected
}

// collect adds every endpoint of n's tree to eps, by address.
func collect(n *lb.Node, eps map[string]lb.Endpoint) {
	if n == nil {
		return
	}
	for _, e := range n.Endpoints {
		eps[e.Address] = e
	}
	for i := range n.Children {
		collect(&n.Children[i], eps)
	}
}

// fetchSnapshot reads the page's JSON: the one channel's snapshot.
func fetchSnapshot(t *testing.T, url string) conn.Snapshot {
	t.Helper()
	resp, err := http.Get(url + "/?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snaps []conn.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snaps); err != nil || len(snaps) != 1 {
		t.Fatalf("the page's JSON: %v (%d snapshots)", err, len(snaps))
	}
	return snaps[0]
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
