package eds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// drops has three drop categories, one per denominator, the last capped
// at 100%.
const drops = `{"clusterName": "c", "policy": {"dropOverloads": [
    {"category": "throttle", "dropPercentage": {"numerator": 10}},
    {"category": "lb", "dropPercentage": {"numerator": 5, "denominator": "TEN_THOUSAND"}},
    {"category": "all", "dropPercentage": {"numerator": 2000000, "denominator": "MILLION"}}]},
  "endpoints": [{"locality": {"zone": "a"}, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}}]}]}`

// An assignment's drop_overloads put xds_cluster_impl_experimental above
// the priority policy with each category's share per million (a
// numerator above its denominator is 100%), in order; Policies'
// MaxConcurrentRequests adds the limit. The config parses with lbkit's
// registry.
func TestDropOverloadsPutClusterImplOnTop(t *testing.T) {
	cla, err := eds.Parse([]byte(drops))
	if err != nil {
		t.Fatal(err)
	}
	want := []eds.DropOverload{
		{Category: "throttle", DropPercentage: eds.FractionalPercent{Numerator: 10}},
		{Category: "lb", DropPercentage: eds.FractionalPercent{Numerator: 5, Denominator: eds.DenominatorTenThousand}},
		{Category: "all", DropPercentage: eds.FractionalPercent{Numerator: 2000000, Denominator: eds.DenominatorMillion}},
	}
	if fmt.Sprint(cla.DropOverloads) != fmt.Sprint(want) {
		t.Errorf("DropOverloads = %+v, want %+v", cla.DropOverloads, want)
	}
	limit := uint32(1024)
	c, err := new(eds.Namer).Convert(cla, eds.Policies{MaxConcurrentRequests: &limit})
	if err != nil {
		t.Fatal(err)
	}
	prefix := `{"loadBalancingConfig":[{"xds_cluster_impl_experimental":{"cluster":"c","maxConcurrentRequests":1024,"dropCategories":[` +
		`{"category":"throttle","requestsPerMillion":100000},{"category":"lb","requestsPerMillion":500},{"category":"all","requestsPerMillion":1000000}],` +
		`"childPolicy":[{"priority_experimental":`
	if got := string(c.State.ServiceConfig); !strings.HasPrefix(got, prefix) {
		t.Errorf("service config\n got %s\nwant %s...", got, prefix)
	}
	p, err := lb.ParseLoadBalancingConfig(configOf(t, c.State.ServiceConfig))
	if err != nil || p.Name != clusterimpl.Name {
		t.Fatalf("the registry parses it as %v, %v", p, err)
	}
	// Neither drops nor a limit: the priority policy is the top.
	plain, err := new(eds.Namer).State(mustParse(t, twoPriorities))
	if err != nil || !strings.HasPrefix(string(plain.ServiceConfig), `{"loadBalancingConfig":[{"priority_experimental"`) {
		t.Errorf("without drops: %s, %v", plain.ServiceConfig, err)
	}
}

func mustParse(t *testing.T, doc string) *eds.ClusterLoadAssignment {
	t.Helper()
	cla, err := eds.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cla
}

// The eds:/// resolver honours drop_overloads through a real channel: 20%
// of 2000 fail-fast picks fail with the category's drop error (within 5
// standard deviations: the picker's seed comes from the channel's seeded
// source, but how many pickers the channel builds before READY depends on
// the connection's timing), and the policy counts them.
func TestEDSFileDropsThroughAChannel(t *testing.T) {
	addr := listeners(t, 1)[0]
	host, port, _ := net.SplitHostPort(addr)
	doc := fmt.Sprintf(`{"clusterName": "c", "policy": {"dropOverloads": [{"category": "overload", "dropPercentage": {"numerator": 20}}]},
	  "endpoints": [{"locality": {"zone": "a"}, "loadBalancingWeight": 1, "lbEndpoints": [
	    {"endpoint": {"address": {"socketAddress": {"address": %q, "portValue": %s}}}}]}]}`, host, port)
	path := filepath.Join(t.TempDir(), "cla.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	m := lbtest.NewMetrics()
	ch, err := conn.New("eds://"+path, conn.WithoutHealthCheck(), conn.WithRandSeed(3, 4), conn.WithMetricsRecorder(m))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
	defer cancel()
	// The first successful wait-for-ready pick means the endpoint is READY.
	for {
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err == nil {
			r.Finish(lb.DoneInfo{})
			break
		}
		if !errors.Is(err, lb.ErrDropped) {
			t.Fatal(err)
		}
	}
	const n = 2000
	dropped := 0
	for range n {
		r, err := ch.Pick(ctx, conn.PickOptions{})
		switch {
		case err == nil:
			r.Finish(lb.DoneInfo{})
		case errors.Is(err, lb.ErrDropped) && strings.Contains(err.Error(), `drop category "overload" (20% of requests`):
			dropped++
		default:
			t.Fatalf("pick: %v", err)
		}
	}
	if sd := math.Sqrt(n * 0.2 * 0.8); math.Abs(float64(dropped)-n*0.2) > 5*sd {
		t.Errorf("%d of %d picks dropped, want %v ± %.0f", dropped, n, n*0.2, 5*sd)
	}
	if got := m.Value(clusterimpl.MetricDrops.Name, "eds://"+path, "c", "overload"); got < int64(dropped) {
		t.Errorf("%s = %d, want at least the %d dropped here", clusterimpl.MetricDrops.Name, got, dropped)
	}
	t.Logf("%d of %d dropped", dropped, n)
}

// configOf returns a service config's loadBalancingConfig.
func configOf(t *testing.T, sc []byte) []byte {
	t.Helper()
	var v struct {
		LoadBalancingConfig json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(sc, &v); err != nil {
		t.Fatal(err)
	}
	return v.LoadBalancingConfig
}
