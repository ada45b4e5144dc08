package nethttp_test

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
	"github.com/lbkit/lbkit/lb/wrr"
)

// startReporting starts a real HTTP server on loopback that answers with
// its name and the endpoint-load-metrics header value report.
func startReporting(t *testing.T, name, report string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(nethttp.LoadReportHeader, report)
		io.WriteString(w, name)
	}))
	t.Cleanup(srv.Close)
	return hostOf(srv)
}

// Real HTTP backends that send endpoint-load-metrics (one in the TEXT
// form, one in JSON) weigh weighted_round_robin by gRFC A58: the backend
// at a quarter of the other's utilization gets four times its requests
// once the weights are updated. A third backend's malformed reports are
// ignored (it gets the mean weight) and counted on the channel.
func TestLoadReportsShiftTrafficToTheLessLoadedBackend(t *testing.T) {
	addrs := []string{
		startReporting(t, "light", "TEXT cpu_utilization=0.2, rps_fractional=100"),         // weight 500
		startReporting(t, "heavy", `JSON {"cpu_utilization": 0.8, "rps_fractional": 100}`), // weight 125
		startReporting(t, "broken", "TEXT cpu_utilization=NaN, rps_fractional=100"),
	}
	mock, metrics := clock.NewMock(), lbtest.NewMetrics()
	pol := &capturing{name: "wrr_on_mock_clock", inner: wrr.Builder{}}
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: addrs}),
		conn.WithClock(mock), conn.WithRegistry(lb.NewRegistry(pol)), conn.WithMetricsRecorder(metrics),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"wrr_on_mock_clock": {"blackoutPeriod": "10s"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	// The channel's picker changes as the backends become READY; once
	// each has answered, the shares are even.
	for len(httpbackend.CountBodies(t, client, "http://svc/", 3)) < 3 {
	}
	before := httpbackend.CountBodies(t, client, "http://svc/", 300)
	for _, name := range []string{"light", "heavy", "broken"} {
		if before[name] < 98 || before[name] > 102 {
			t.Fatalf("before the weight update: %v, want even shares", before)
		}
	}
	// The blackout keeps the reports out of every picker built before the
	// mock clock moves, even one rebuilt when the last backend becomes
	// READY after the others have reported (with no blackout, that picker
	// would weigh them already).
	lbtest.AdvanceSerializers(t, mock, 10*time.Second+wrr.DefaultWeightUpdatePeriod, pol.serializer(t))
	got := httpbackend.CountBodies(t, client, "http://svc/", 900)
	// light 500, heavy 125, broken the mean 312.5: of 900, 480, 120, 300.
	for name, want := range map[string]float64{"light": 480, "heavy": 120, "broken": 300} {
		if math.Abs(float64(got[name])-want) > 3 {
			t.Fatalf("after the weight update: %v, want light 480, heavy 120, broken 300 (± 3)", got)
		}
	}
	if n := metrics.Value(conn.MetricMalformedLoadReports.Name, ch.Target()); n < 100 {
		t.Errorf("%s = %d, want one per answer of the broken backend", conn.MetricMalformedLoadReports.Name, n)
	}
}

// A Client's Transport template passes its BIN decoder on to every host's
// Transport: a backend's BIN reports reach it, once per answer.
func TestClientTemplateDecodesBinLoadReports(t *testing.T) {
	addr := startReporting(t, "b", "BIN b2s=")
	var calls atomic.Int64
	decode := func(payload []byte, dst *lb.LoadReport) error {
		if string(payload) != "ok" {
			return errors.New("unexpected payload")
		}
		calls.Add(1)
		dst.CPUUtilization = 0.5
		return nil
	}
	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://svc", nethttp.Route{Target: "static:///" + addr}),
		nethttp.WithTransport(&nethttp.Transport{WaitForReady: true, DecodeBinLoadReport: decode}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if got := httpbackend.CountBodies(t, client.Client, "http://svc/", 5); got["b"] != 5 {
		t.Fatalf("answers %v, want 5 from b", got)
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("the template's decoder ran %d times for 5 answers, want 5", n)
	}
}

// A template's RequestHash reaches every host's Transport, as its other
// settings do (it was once dropped: requests then carried no hash).
func TestClientTemplateHashesRequests(t *testing.T) {
	addr := startReporting(t, "b", "")
	var calls atomic.Int64
	hash := func(*http.Request) (uint64, bool) {
		calls.Add(1)
		return 7, true
	}
	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://svc", nethttp.Route{Target: "static:///" + addr}),
		nethttp.WithTransport(&nethttp.Transport{WaitForReady: true, RequestHash: hash}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if got := httpbackend.CountBodies(t, client.Client, "http://svc/", 5); got["b"] != 5 {
		t.Fatalf("answers %v, want 5 from b", got)
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("the template's RequestHash ran %d times for 5 requests, want 5", n)
	}
}
