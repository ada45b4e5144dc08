package xds_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// namedServers starts an HTTP server per name that answers with its name,
// and returns their host:port addresses.
func namedServers(t testing.TB, names ...string) []string {
	t.Helper()
	var addrs []string
	for _, name := range names {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return addrs
}

// get sends one request through client and returns the body, or the error.
func get(client *http.Client) (string, error) {
	resp, err := client.Get("http://demo/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestChannelFollowsTheControlPlane sends real HTTP requests through a
// channel following a real management server: each snapshot moves the
// traffic, the server's outage changes nothing, and the cluster's removal
// fails requests with the reason.
func TestChannelFollowsTheControlPlane(t *testing.T) {
	addrs := namedServers(t, "one", "two", "three")
	cp := startControlPlane(t)
	cluster := []*clusterv3.Cluster{clusterNamed("demo")}
	cp.set("1", cluster, []*endpointv3.ClusterLoadAssignment{
		assignment("demo", locality{Zone: "a", Weight: 1, Addrs: addrs[:2]}),
	})
	fast := backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond}
	ch, err := conn.New("xds-cluster:///demo", conn.WithResolver(testBuilder(t, cp.addr, xds.WithBackoff(fast))))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	// Snapshot 1: both servers of the locality get requests (once both
	// are connected), "three" none.
	ctx := ctxFor(t)
	seen := map[string]int{}
	for seen["one"] == 0 || seen["two"] == 0 {
		name, err := get(client)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
		if ctx.Err() != nil {
			t.Fatalf("snapshot 1 (one, two): requests went to %v", seen)
		}
	}
	if seen["three"] != 0 {
		t.Errorf("snapshot 1 (one, two): requests went to %v", seen)
	}

	// Snapshot 2 moves the locality to "three": once a request reaches
	// it, every later one does.
	cp.set("2", cluster, []*endpointv3.ClusterLoadAssignment{
		assignment("demo", locality{Zone: "a", Weight: 1, Addrs: addrs[2:]}),
	})
	for {
		name, err := get(client)
		if err != nil {
			t.Fatal(err)
		}
		if name == "three" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("snapshot 2 was never followed")
		}
	}
	for range 10 {
		if name, err := get(client); name != "three" || err != nil {
			t.Fatalf("after snapshot 2: %q, %v", name, err)
		}
	}

	// The management server goes away: the channel keeps serving its last
	// state; it comes back, and the client subscribes again.
	streams := cp.streamCount()
	cp.stop()
	for range 10 {
		if name, err := get(client); name != "three" || err != nil {
			t.Fatalf("while the server is down: %q, %v", name, err)
		}
	}
	cp.restart()
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && r.GetVersionInfo() == "2" && cp.streamCount() > streams
	})

	// Snapshot 3 removes the cluster: the channel fails requests with the
	// reason (TestClusterRemovalFailsEveryPickWithTheReason checks every
	// pick of the transition).
	cp.set("3", nil, nil)
	for {
		_, err = ch.Pick(ctx, conn.PickOptions{})
		if err != nil && strings.Contains(err.Error(), `cluster "demo" does not exist`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pick after the removal: %v, want the cluster named as not existing", err)
		}
		runtime.Gosched()
	}
	if st := ch.State(); st != lb.TransientFailure {
		t.Errorf("channel state %v after the removal, want TRANSIENT_FAILURE", st)
	}
	failFast := &http.Client{Transport: &nethttp.Transport{Channel: ch}}
	if _, err := get(failFast); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("request after the removal: %v", err)
	}
}

// A cluster removed and added back, again and again, under fail-fast
// picks in a tight loop: from the moment the channel stops serving, every
// failed pick names the reason ("cluster ... does not exist"). The reason
// travels with the empty tree (resolver.State.Degraded); before issue 32
// it followed it, and a pick in between failed with the priority policy's
// bare "empty priority list".
func TestClusterRemovalFailsEveryPickWithTheReason(t *testing.T) {
	const cycles = 20
	addrs := namedServers(t, "one")
	cp := startControlPlane(t)
	cluster := []*clusterv3.Cluster{clusterNamed("demo")}
	assignments := []*endpointv3.ClusterLoadAssignment{assignment("demo", locality{Zone: "a", Weight: 1, Addrs: addrs})}
	ch, err := conn.New("xds-cluster:///demo", conn.WithResolver(testBuilder(t, cp.addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx := ctxFor(t)
	// pick picks fail-fast until a pick succeeds (want true) or fails
	// (want false), and returns the failure.
	pick := func(want bool) error {
		for {
			r, err := ch.Pick(ctx, conn.PickOptions{})
			if err == nil && r.Done != nil {
				r.Done(lb.DoneInfo{})
			}
			if ctx.Err() != nil {
				t.Fatalf("no pick %s before the deadline (last error %v)", map[bool]string{true: "succeeded", false: "failed"}[want], err)
			}
			if (err == nil) == want {
				return err
			}
			if err != nil && !strings.Contains(err.Error(), `cluster "demo" does not exist`) {
				return err
			}
		}
	}
	version := 0
	for i := range cycles {
		version++
		cp.set(fmt.Sprint(version), cluster, assignments)
		if err := pick(true); err != nil {
			t.Fatalf("cycle %d: while the cluster came back, a pick failed with %q, which does not name the removal", i, err)
		}
		version++
		cp.set(fmt.Sprint(version), nil, nil)
		if err := pick(false); !strings.Contains(err.Error(), `cluster "demo" does not exist`) {
			t.Fatalf("cycle %d: the first failed pick after the removal says %q; want the cluster named as not existing", i, err)
		}
		// The snapshot shows the reason on the resolver and the tree.
		s, err := ch.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Resolver == nil || s.Balancer == nil || !strings.Contains(s.Resolver.LastError, "does not exist") || !strings.Contains(s.Balancer.LastError, "does not exist") {
			t.Fatalf("cycle %d: snapshot after the removal: resolver %+v, balancer %+v; want the reason on both", i, s.Resolver, s.Balancer)
		}
	}
}

// An http.Client whose requests follow a management server: the second
// snapshot moves the cluster's endpoint from one server to another.
func ExampleNewBuilder() {
	addrs, stop := exampleServers("blue", "green")
	defer stop()
	cp, err := controlplane.Start("127.0.0.1:0") // a go-control-plane server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	publish := func(version, addr string) {
		err := cp.Set(version, []*clusterv3.Cluster{clusterNamed("shop")}, []*endpointv3.ClusterLoadAssignment{
			assignment("shop", locality{Zone: "a", Weight: 1, Addrs: []string{addr}}),
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	publish("1", addrs[0])

	// The bootstrap names the management server and this client's node.
	boot, err := xds.ParseBootstrap([]byte(`{
	  "xds_servers": [{"server_uri": "` + cp.Addr + `", "channel_creds": [{"type": "insecure"}]}],
	  "node": {"id": "` + testNode + `"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, closeClient, err := exampleClient("xds-cluster:///shop", b)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	name, _ := get(client)
	fmt.Println("snapshot 1:", name)
	publish("2", addrs[1])
	fmt.Println("snapshot 2:", getUntil(client, "green"))
	// Output:
	// snapshot 1: blue
	// snapshot 2: green
}

// The xds resolvers of a Builder given WithMetrics record gRFC A78's
// XdsClient metrics for their channel's target; here into lbtest's
// in-memory recorder (adapters/otel's recorder sends them to
// OpenTelemetry).
func ExampleWithMetrics() {
	addrs, stop := exampleServers("blue")
	defer stop()
	cp, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	err = cp.Set("1", []*clusterv3.Cluster{clusterNamed("shop")}, []*endpointv3.ClusterLoadAssignment{
		assignment("shop", locality{Zone: "a", Weight: 1, Addrs: addrs}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: cp.Addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: testNode}}
	metrics := lbtest.NewMetrics()
	b, err := xds.NewBuilder(xds.WithBootstrap(boot), xds.WithMetrics(metrics))
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := conn.New("xds-cluster:///shop", conn.WithResolver(b))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	name, _ := get(&http.Client{Transport: tr})
	fmt.Println("served by", name)
	fmt.Println("connected:", metrics.Value("grpc.xds_client.connected", "xds-cluster:///shop", cp.Addr))
	fmt.Println("clusters acked:", metrics.Value("grpc.xds_client.resources", "xds-cluster:///shop", "#old", "acked", "envoy.config.cluster.v3.Cluster"))
	fmt.Println("endpoints acked:", metrics.Value("grpc.xds_client.resources", "xds-cluster:///shop", "#old", "acked", "envoy.config.endpoint.v3.ClusterLoadAssignment"))
	// Output:
	// served by blue
	// connected: 1
	// clusters acked: 1
	// endpoints acked: 1
}

// exampleClient returns an http.Client whose requests go through a
// channel following target with b's resolvers, and the function that
// closes them.
func exampleClient(target string, b *xds.Builder) (*http.Client, func(), error) {
	ch, err := conn.New(target, conn.WithResolver(b))
	if err != nil {
		return nil, nil, err
	}
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	return &http.Client{Transport: tr}, func() { tr.CloseIdleConnections(); ch.Close() }, nil
}

// getUntil sends requests through client until one is served by want,
// and returns want.
func getUntil(client *http.Client, want string) string {
	for {
		if name, _ := get(client); name == want {
			return name
		}
	}
}

// exampleServers is namedServers for examples.
func exampleServers(names ...string) ([]string, func()) {
	var addrs []string
	var stops []func()
	for _, name := range names {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
		stops = append(stops, srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return addrs, func() {
		for _, s := range stops {
			s()
		}
	}
}

// The channel's snapshot and its debug page show what the xds resolver
// follows: the cluster, the stream, the versions accepted, the policies,
// and a refused resource's reason.
func TestSnapshotAndDebugPageShowTheXDSState(t *testing.T) {
	cp := startControlPlane(t)
	good := assignment("demo", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80", "10.0.0.2:80"}})
	cp.set("1", []*clusterv3.Cluster{clusterNamed("demo")}, []*endpointv3.ClusterLoadAssignment{good})
	ch, err := conn.New("xds-cluster:///demo", conn.WithResolver(testBuilder(t, cp.addr)), conn.WithDialer(standIn{}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx := ctxFor(t)
	if _, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true}); err != nil {
		t.Fatal(err)
	}
	facts := func() (map[string]string, string) {
		s, err := ch.Snapshot(ctx)
		if err != nil || s.Resolver == nil {
			t.Fatalf("Snapshot: %+v, %v", s.Resolver, err)
		}
		m := map[string]string{}
		for _, f := range s.Resolver.Facts {
			m[f.Name] = f.Value
		}
		return m, s.Resolver.LastError
	}
	got, lastErr := facts()
	want := map[string]string{"cluster": "demo", "management server": cp.addr, "ADS stream": "up", "clusters version": "1",
		"endpoints resource": "demo", "endpoints version": "1", "endpoint policy": `[{"weighted_round_robin":{}}]`,
		"outlier detection": "off", "addresses published": "2"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("fact %q = %q, want %q", k, got[k], v)
		}
	}
	if lastErr != "" {
		t.Errorf("LastError %q with nothing wrong", lastErr)
	}
	_, page := getPage(t, debugpage.New(ch))
	for _, s := range []string{`data-role="resolver"`, "clusters version", "management server", cp.addr} {
		if !strings.Contains(page, s) {
			t.Errorf("debug page lacks %q", s)
		}
	}

	// A refused assignment: the reason shows until a good one comes.
	bad := assignment("demo", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.9:80"}})
	bad.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
	cp.set("2", []*clusterv3.Cluster{clusterNamed("demo")}, []*endpointv3.ClusterLoadAssignment{bad})
	for {
		if _, lastErr = facts(); strings.Contains(lastErr, "port_value") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("LastError %q never named the refused field", lastErr)
		}
		runtime.Gosched()
	}
	cp.set("3", []*clusterv3.Cluster{clusterNamed("demo")}, []*endpointv3.ClusterLoadAssignment{good})
	for {
		if got, lastErr = facts(); lastErr == "" && got["endpoints version"] == "3" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after a good assignment: %v, LastError %q", got, lastErr)
		}
		runtime.Gosched()
	}
}

// getPage gets the HTML page of h.
func getPage(t *testing.T, h http.Handler) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}
