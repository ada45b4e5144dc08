package debugpage_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readyChannel returns a round_robin channel READY on one real backend.
func readyChannel(t *testing.T) (*conn.Channel, string) {
	t.Helper()
	return readyChannelWith(t, `{"loadBalancingConfig":[{"round_robin":{}}]}`)
}

// readyChannelWith returns a channel with service config sc, READY on one
// real backend.
func readyChannelWith(t *testing.T, sc string) (*conn.Channel, string) {
	t.Helper()
	return readyChannelOn(t, sc, conn.PickOptions{}, func(a resolver.Address) resolver.Address { return a })
}

// readyChannelOn returns a channel with service config sc on one real
// backend, whose address the resolver sends as mark makes it, after a
// wait-for-ready pick with opts.
func readyChannelOn(t *testing.T, sc string, opts conn.PickOptions, mark func(resolver.Address) resolver.Address) (*conn.Channel, string) {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	r := manual.NewBuilder("test", manual.WithInitialState(resolver.State{Addresses: []resolver.Address{mark(resolver.Address{Addr: addr})}}))
	ch, err := conn.New("test:///svc", conn.WithResolver(r), conn.WithDefaultServiceConfig(sc), conn.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts.WaitForReady = true
	if _, err := ch.Pick(ctx, opts); err != nil {
		t.Fatalf("Pick: %v", err)
	}
	return ch, addr
}

func get(t *testing.T, h http.Handler, method, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

// ?format=json serves one snapshot per channel, the HTML page shows the
// same tree and refers to nothing outside itself, and only GET and HEAD are
// served.
func TestJSONAndHTML(t *testing.T) {
	ch, addr := readyChannel(t)
	h := debugpage.New(ch)

	resp, body := get(t, h, http.MethodGet, "/?format=json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var snaps []conn.Snapshot
	if err := json.Unmarshal([]byte(body), &snaps); err != nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	if len(snaps) != 1 || snaps[0].State != lb.Ready || snaps[0].Balancer == nil || snaps[0].Balancer.Endpoints[0].Address != addr {
		t.Fatalf("snapshots %+v, want one READY channel with endpoint %s", snaps, addr)
	}

	resp, body = get(t, h, http.MethodGet, "/")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type %q, want text/html", ct)
	}
	for _, want := range []string{"test:///svc", "round_robin", addr, "READY", `http-equiv="refresh"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page does not contain %q", want)
		}
	}
	for _, external := range []string{"src=", "http://", "https://", "@import", "url("} {
		if strings.Contains(body, external) {
			t.Errorf("page refers to an outside asset (%q)", external)
		}
	}

	if resp, _ := get(t, h, http.MethodPost, "/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", resp.StatusCode)
	}

	ch.Close()
	_, body = get(t, h, http.MethodGet, "/?format=json")
	if !strings.Contains(body, "channel closed") {
		t.Errorf("closed channel's JSON %s does not say it is closed", body)
	}
}

// A nil channel given to New is shown as an error naming the mistake, and
// the other channels as usual: not a nil-pointer panic on every request
// (issue 28).
func TestNilChannelIsShownAsAnError(t *testing.T) {
	ch, addr := readyChannel(t)
	h := debugpage.New(ch, nil)
	const want = "debugpage.New: channel 2 of 2 is nil"
	for _, target := range []string{"/?format=json", "/"} {
		resp, body := get(t, h, http.MethodGet, target)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) || !strings.Contains(body, addr) {
			t.Errorf("GET %s: status %d, body without %q or the good channel's %s:\n%s", target, resp.StatusCode, want, addr, body)
		}
	}
}

// An outlier detection config that cannot eject in the channel's tree is
// shown as its node's warning, in the JSON and on the page (issue 28).
func TestOutlierDetectionThatCannotEjectIsShown(t *testing.T) {
	ch, _ := readyChannelWith(t, `{"loadBalancingConfig":[{"outlier_detection_experimental":{"failurePercentageEjection":{},"childPolicy":[{"round_robin":{}}]}}]}`)
	const want = "failurePercentageEjection cannot eject: minimumHosts is 5, but the tree has 1 address(es)"
	h := debugpage.New(ch)
	for _, target := range []string{"/?format=json", "/"} {
		if _, body := get(t, h, http.MethodGet, target); !strings.Contains(body, want) {
			t.Errorf("GET %s does not show %q:\n%s", target, want, body)
		}
	}
}

// An endpoint the resolver marks draining carries the page's draining mark
// beside its state, and the JSON's "draining" (issue 27; the browser test
// internal/browsertest.TestDebugPageShowsDrainingEndpoints watches it come
// and go).
func TestDrainingEndpointIsMarked(t *testing.T) {
	ch, _ := readyChannelOn(t, `{"loadBalancingConfig":[{"round_robin":{}}]}`, conn.PickOptions{}, draining.Set)
	h := debugpage.New(ch)
	if _, body := get(t, h, http.MethodGet, "/?format=json"); !strings.Contains(body, `"draining": true`) {
		t.Errorf("JSON without the draining mark:\n%s", body)
	}
	if _, body := get(t, h, http.MethodGet, "/"); !strings.Contains(body, `data-role="draining"`) {
		t.Errorf("page without the draining mark:\n%s", body)
	}
}

// A routing policy's routes are shown with their match, their action and
// the requests each matched, the latest request's route marked, in the
// JSON and on the page (issue 31).
func TestRoutesAndTheirMatchesAreShown(t *testing.T) {
	const sc = `{"loadBalancingConfig":[{"xds_routing_experimental":{
		"routeConfig":{"virtualHosts":[{"name":"svc","domains":["*"],"routes":[
			{"name":"admin","match":{"prefix":"/admin"},"route":{"cluster":"c"}},
			{"name":"rest","match":{"prefix":"/"},"route":{"cluster":"c"}}]}]},
		"clusters":{"c":{"childPolicy":[{"round_robin":{}}]}}}}]}`
	// The first pick may pick more than once while the channel connects.
	ch, _ := readyChannelOn(t, sc, conn.PickOptions{Authority: "svc", Method: "/admin/x"}, func(a resolver.Address) resolver.Address {
		return hierarchy.Set(a, []string{"c"})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pick := func(path string) {
		t.Helper()
		if _, err := ch.Pick(ctx, conn.PickOptions{Authority: "svc", Method: path}); err != nil {
			t.Fatalf("Pick %s: %v", path, err)
		}
	}
	s, err := ch.Snapshot(ctx)
	if err != nil || s.Balancer == nil || len(s.Balancer.Routes) != 2 {
		t.Fatalf("snapshot %+v, %v; want the routing node's two routes", s.Balancer, err)
	}
	admin := s.Balancer.Routes[0].Matches
	for range 3 {
		pick("/admin/x")
	}
	for range 5 {
		pick("/index.html")
	}
	h := debugpage.New(ch)
	_, body := get(t, h, http.MethodGet, "/?format=json")
	var snaps []conn.Snapshot
	if err := json.Unmarshal([]byte(body), &snaps); err != nil || len(snaps) != 1 || snaps[0].Balancer == nil {
		t.Fatalf("JSON: %v\n%s", err, body)
	}
	want := []lb.RouteStats{
		{Route: "svc / admin", Match: `{"prefix":"/admin"}`, Action: "cluster c", Matches: admin + 3},
		{Route: "svc / rest", Match: `{"prefix":"/"}`, Action: "cluster c", Matches: 5, Last: true},
	}
	if got := snaps[0].Balancer.Routes; !reflect.DeepEqual(got, want) {
		t.Errorf("JSON routes %+v, want %+v", got, want)
	}
	_, body = get(t, h, http.MethodGet, "/")
	page := html.UnescapeString(body)
	for _, want := range []string{`data-role="routes"`, `data-route="svc / admin"`, `data-role="route-matches">` + strconv.FormatUint(admin+3, 10) + "<",
		`data-route="svc / rest"`, `data-role="route-matches">5<`, `data-role="last-route"`, "cluster c", `{"prefix":"/admin"}`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
