package xds

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
)

// clusterResponse is a CDS response of version (also its nonce) with a
// valid EDS cluster for each of names.
func clusterResponse(t lbtest.TB, version string, names ...string) *discoveryv3.DiscoveryResponse {
	t.Helper()
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: ClusterType, VersionInfo: version, Nonce: version}
	for _, n := range names {
		a, err := anypb.New(&clusterv3.Cluster{Name: n, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}})
		if err != nil {
			t.Fatalf("%v", err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

var insecureDial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}

// run runs f inside c's serializer and waits for it.
func run(t *testing.T, c *client, f func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.ser.Run(ctx, f); err != nil {
		t.Fatal(err)
	}
}

// offlineClient returns a client of types whose server is an address
// nothing listens on: its stream never starts, and tests hand it
// responses with handle. It is closed when t ends.
func offlineClient(t *testing.T, types ...*resourceType) *client {
	t.Helper()
	c, err := newClient(clientConfig{
		servers:         []serverConfig{{Server{URI: "127.0.0.1:1"}, insecureDial}},
		node:            &corev3.Node{Id: "n"},
		clock:           clock.NewMock(),
		logger:          slog.New(slog.DiscardHandler),
		backoff:         backoff.Default(),
		resourceTimeout: DefaultResourceTimeout,
	}, types...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// recordingWatcher records which callbacks ran.
type recordingWatcher struct{ calls chan string }

func (w recordingWatcher) update(any)   { w.calls <- "update" }
func (w recordingWatcher) failed(error) { w.calls <- "failed" }
func (w recordingWatcher) missing()     { w.calls <- "missing" }
func (w recordingWatcher) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-w.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no callback")
		return ""
	}
}

// A CDS response without a cluster that was subscribed but never received
// does not delete it: the response may answer a request sent before the
// subscription (found by make stress). A cluster received before and then
// left out is deleted.
func TestWholeSetResponseDeletesOnlyWhatWasReceived(t *testing.T) {
	c := offlineClient(t, clusterResource, endpointResource)
	w1, w2 := recordingWatcher{make(chan string, 8)}, recordingWatcher{make(chan string, 8)}
	run(t, c, func() {
		c.watch(ClusterType, "c1", w1, nil)
		c.watch(ClusterType, "c2", w2, nil)
	})
	for _, w := range []recordingWatcher{w1, w2} {
		if got := w.next(t); got != "failed" { // the stream's error, at once
			t.Fatalf("first callback %q, want failed", got)
		}
	}
	respond := func(version string, names ...string) {
		resp := clusterResponse(t, version, names...)
		run(t, c, func() { c.handle(c.conns[0], resp) })
	}
	respond("1", "c1")
	if got := w1.next(t); got != "update" {
		t.Fatalf("c1: %q, want update", got)
	}
	respond("2", "c2")
	if got := w2.next(t); got != "update" {
		t.Fatalf("c2: %q, want update (it was never deleted)", got)
	}
	if got := w1.next(t); got != "missing" {
		t.Fatalf("c1 left out after it was received: %q, want missing", got)
	}
}

// A resource kept subscribed after its last watcher left (the last of its
// type, see Cancel) and then watched again gets its does-not-exist timer
// back: no request is sent for it, so none would start the timer (found by
// review). The stream is pretended up; nothing listens.
func TestRewatchedKeptResourceGetsItsTimer(t *testing.T) {
	clk := clock.NewMock()
	c, err := newClient(clientConfig{
		servers:         []serverConfig{{Server{URI: "127.0.0.1:1"}, insecureDial}},
		node:            &corev3.Node{Id: "n"},
		clock:           clk,
		logger:          slog.New(slog.DiscardHandler),
		backoff:         backoff.Config{BaseDelay: time.Hour, Multiplier: 1, MaxDelay: time.Hour}, // no retry within the test
		resourceTimeout: DefaultResourceTimeout,
	}, clusterResource, endpointResource)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	w1 := recordingWatcher{make(chan string, 8)}
	var s1 *subscription
	run(t, c, func() { s1 = c.watch(EndpointType, "e1", w1, nil) })
	if got := w1.next(t); got != "failed" { // the stream's error; the client then backs off
		t.Fatalf("first callback %q, want failed", got)
	}
	timed := func() (has bool) {
		run(t, c, func() { has = c.types[EndpointType].resources["e1"].timer != nil })
		return has
	}
	run(t, c, func() {
		c.conns[0].live = true // as if a stream had sent the subscription
		w := c.conns[0].wire[EndpointType]
		w.sent, w.dirty = true, false
		c.startTimers(&discoveryv3.DiscoveryRequest{TypeUrl: EndpointType, ResourceNames: []string{"e1"}})
	})
	if !timed() {
		t.Fatal("no timer after the request")
	}
	run(t, c, s1.cancel) // e1 is the last endpoints resource: kept, its timer stopped
	if timed() {
		t.Fatal("the timer of a resource without watchers still runs")
	}
	w2 := recordingWatcher{make(chan string, 8)}
	run(t, c, func() { c.watch(EndpointType, "e1", w2, nil) })
	if !timed() {
		t.Fatal("watched again: no timer, so it would never be found missing")
	}
	if got := w2.next(t); got != "failed" { // a new watcher learns the stream's last error
		t.Fatalf("first callback %q, want failed", got)
	}
	lbtest.AdvanceSerializers(t, clk, DefaultResourceTimeout-time.Nanosecond, c.ser)
	select {
	case got := <-w2.calls:
		t.Fatalf("a nanosecond before the timeout: %q", got)
	default:
	}
	lbtest.AdvanceSerializers(t, clk, time.Nanosecond, c.ser)
	if got := w2.next(t); got != "missing" {
		t.Fatalf("after the timeout: %q, want missing", got)
	}
}

// gRFC A57: "we do not consider it an error if the ADS stream was closed
// after having received a response on the stream". A server that answers
// and then closes the stream (to rebalance, or at its connections'
// maximum age) leaves watchers untold, even one whose resource has not
// arrived yet, and the next stream starts at once, without backoff. Found
// by TestPropertyADS: every stream end was reported as a failure, so a
// channel still waiting for its cluster failed its picks.
func TestStreamClosedAfterAResponseIsNoError(t *testing.T) {
	c, err := newClient(clientConfig{
		servers:         []serverConfig{{Server{URI: "server-0"}, insecureDial}},
		node:            &corev3.Node{Id: "n"},
		clock:           clock.NewMock(),
		logger:          slog.New(slog.DiscardHandler),
		backoff:         backoff.Default(),
		resourceTimeout: DefaultResourceTimeout,
		runStream:       func(*adsStream) {}, // the test plays the stream
	}, clusterResource)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var log []string
	resp := clusterResponse(t, "1") // no cluster: "a" has not arrived
	run(t, c, func() {
		c.watch(ClusterType, "a", logWatcher{"a", &log}, nil)
		s := c.conns[0].stream
		c.streamUp(s)
		c.received(s, resp)
		c.streamEnded(s, errors.New("max connection age"))
	})
	run(t, c, func() {
		if len(log) != 0 {
			t.Errorf("the watcher heard %v, want nothing", log)
		}
		if sc := c.conns[0]; sc.stream == nil || sc.retry != nil {
			t.Errorf("stream %v, backoff pending %v: want a new stream at once", sc.stream != nil, sc.retry != nil)
		}
	})
}

// A resource resent unchanged in a new version (go-control-plane resends
// every cluster with each snapshot) is ACKed and tells its watchers
// nothing; a changed one tells them. After a stream failure, which
// watchers hear of, the next copy tells them even unchanged, so that they
// learn the resource is good again.
func TestUnchangedResourceNotifiesNobody(t *testing.T) {
	c, err := newClient(clientConfig{
		servers:         []serverConfig{{Server{URI: "127.0.0.1:1"}, insecureDial}}, // nothing listens
		node:            &corev3.Node{Id: "n"},
		clock:           clock.NewMock(),
		logger:          slog.New(slog.DiscardHandler),
		backoff:         backoff.Config{BaseDelay: time.Hour, Multiplier: 1, MaxDelay: time.Hour},
		resourceTimeout: DefaultResourceTimeout,
	}, clusterResource, endpointResource)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	w := recordingWatcher{make(chan string, 8)}
	run(t, c, func() { c.watch(ClusterType, "c1", w, nil) })
	if got := w.next(t); got != "failed" { // the stream's error
		t.Fatalf("first callback %q, want failed", got)
	}
	// Callbacks run inside handle, so they have run when run returns.
	respond := func(resp *discoveryv3.DiscoveryResponse) (got []string) {
		run(t, c, func() { c.handle(c.conns[0], resp) })
		for {
			select {
			case call := <-w.calls:
				got = append(got, call)
			default:
				return got
			}
		}
	}
	acked := func(version string) {
		t.Helper()
		var ws wireState
		run(t, c, func() { ws = *c.conns[0].wire[ClusterType] })
		if ws.version != version || ws.nack != "" || !ws.dirty {
			t.Fatalf("wire state %+v, want version %q ACKed and a request due", ws, version)
		}
	}
	if got := respond(clusterResponse(t, "1", "c1")); len(got) != 1 || got[0] != "update" {
		t.Fatalf("first copy: %q, want one update", got)
	}
	if got := respond(clusterResponse(t, "2", "c1")); len(got) != 0 {
		t.Fatalf("unchanged copy in version 2: %q, want no callback", got)
	}
	acked("2")
	changed := clusterResponse(t, "3", "c1")
	var cl clusterv3.Cluster
	if err := changed.Resources[0].UnmarshalTo(&cl); err != nil {
		t.Fatal(err)
	}
	cl.EdsClusterConfig.ServiceName = "other"
	if err := changed.Resources[0].MarshalFrom(&cl); err != nil {
		t.Fatal(err)
	}
	if got := respond(changed); len(got) != 1 || got[0] != "update" {
		t.Fatalf("changed copy: %q, want one update", got)
	}
	acked("3")
	run(t, c, func() { c.streamFailed(c.conns[0], errors.New("gone")) })
	if got := w.next(t); got != "failed" {
		t.Fatalf("stream failure: %q, want failed", got)
	}
	changed.VersionInfo, changed.Nonce = "4", "4"
	if got := respond(changed); len(got) != 1 || got[0] != "update" {
		t.Fatalf("unchanged copy after a failure: %q, want one update", got)
	}
	acked("4")
}
