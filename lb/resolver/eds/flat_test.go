package eds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// threeEndpoints has two localities of very different weights in priority
// 0 and one locality in priority 1.
const threeEndpoints = `{"clusterName": "c", "endpoints": [
  {"locality": {"zone": "a"}, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}},
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 80}}}, "loadBalancingWeight": 5}]},
  {"locality": {"zone": "b"}, "loadBalancingWeight": 100, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.3", "portValue": 80}}}}]},
  {"locality": {"zone": "c"}, "loadBalancingWeight": 1, "lbEndpoints": [
    {"healthStatus": "DRAINING", "endpoint": {"address": {"socketAddress": {"address": "10.0.0.4", "portValue": 80}}}}]},
  {"locality": {"zone": "d"}, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.5", "portValue": 80}}}}]},
  {"locality": {"zone": "e"}, "priority": 1, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.1.1", "portValue": 80}}}}]}]}`

// TestConvertFlatHasNoLocalityLayer: with Flat, each priority's child is
// the endpoint policy itself, over the priority's endpoints in document
// order, each address's path being [child name]; the same localities and
// endpoints are left out as without Flat.
func TestConvertFlatHasNoLocalityLayer(t *testing.T) {
	cla, err := eds.Parse([]byte(threeEndpoints))
	if err != nil {
		t.Fatal(err)
	}
	var flat, tree eds.Namer
	c, err := flat.Convert(cla, eds.Policies{Endpoint: json.RawMessage(`[{"pick_first":{"shuffleAddressList":true}}]`), Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"loadBalancingConfig":[{"priority_experimental":{"children":{` +
		`"priority-0-0":{"config":[{"pick_first":{"shuffleAddressList":true}}]},` +
		`"priority-1-0":{"config":[{"pick_first":{"shuffleAddressList":true}}]}},` +
		`"priorities":["priority-0-0","priority-1-0"]}}]}`
	if got := string(c.State.ServiceConfig); got != want {
		t.Errorf("service config:\n got %s\nwant %s", got, want)
	}
	var got []string
	for _, a := range c.State.Addresses {
		path, _ := hierarchy.Get(a)
		got = append(got, fmt.Sprintf("%s %q", a.Addr, path))
	}
	wantAddrs := []string{`10.0.0.1:80 ["priority-0-0"]`, `10.0.0.2:80 ["priority-0-0"]`, `10.0.0.3:80 ["priority-0-0"]`, `10.0.1.1:80 ["priority-1-0"]`}
	if !slices.Equal(got, wantAddrs) {
		t.Errorf("addresses %q, want %q", got, wantAddrs)
	}
	full, err := tree.Convert(cla, eds.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.LeftOut, full.LeftOut) || c.NotUsable != full.NotUsable || len(c.LeftOut) != 2 || c.NotUsable != 1 {
		t.Errorf("Flat leaves out %q, %d; the locality tree %q, %d", c.LeftOut, c.NotUsable, full.LeftOut, full.NotUsable)
	}
}

// TestConvertFlatUnderOutlierDetection: outlier detection wraps the
// endpoint policy directly.
func TestConvertFlatUnderOutlierDetection(t *testing.T) {
	cla, err := eds.Parse([]byte(twoPriorities))
	if err != nil {
		t.Fatal(err)
	}
	var n eds.Namer
	c, err := n.Convert(cla, eds.Policies{Endpoint: json.RawMessage(`[{"round_robin":{}}]`), OutlierDetection: json.RawMessage(`{"interval":"5s"}`), Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"loadBalancingConfig":[{"priority_experimental":{"children":{` +
		`"priority-0-0":{"config":[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}],"interval":"5s"}}]},` +
		`"priority-1-0":{"config":[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}],"interval":"5s"}}]}},` +
		`"priorities":["priority-0-0","priority-1-0"]}}]}`
	if got := string(c.State.ServiceConfig); got != want {
		t.Errorf("service config:\n got %s\nwant %s", got, want)
	}
}

// TestConvertFlatKeepsTheNamingRules: the names follow the localities as
// they do without Flat (Namer's rules), so two priorities that swap their
// localities swap their names.
func TestConvertFlatKeepsTheNamingRules(t *testing.T) {
	swapped := `{"clusterName": "c", "endpoints": [
  {"locality": {"region": "r", "zone": "b"}, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 80}}}}]},
  {"locality": {"region": "r", "zone": "a"}, "priority": 1, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}}]}]}`
	var flat, tree eds.Namer
	p := eds.Policies{Endpoint: json.RawMessage(`[{"round_robin":{}}]`), Flat: true}
	for i, doc := range []string{twoPriorities, swapped} {
		a, b := priorities(t, mustConvert(t, &flat, doc, p)), priorities(t, mustConvert(t, &tree, doc, eds.Policies{}))
		if !slices.Equal(a, b) {
			t.Errorf("Flat names %q, the locality tree %q", a, b)
		}
		if want := [][]string{{"priority-0-0", "priority-1-0"}, {"priority-1-0", "priority-0-0"}}[i]; !slices.Equal(a, want) {
			t.Errorf("assignment %d: names %q, want %q", i, a, want)
		}
	}
}

func mustConvert(t *testing.T, n *eds.Namer, doc string, p eds.Policies) resolver.State {
	t.Helper()
	cla, err := eds.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.Convert(cla, p)
	if err != nil {
		t.Fatal(err)
	}
	return c.State
}

// priorities returns the priority list of st's service config.
func priorities(t *testing.T, st resolver.State) []string {
	t.Helper()
	var sc struct {
		LoadBalancingConfig []struct {
			Priority struct {
				Priorities []string `json:"priorities"`
			} `json:"priority_experimental"`
		} `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(st.ServiceConfig, &sc); err != nil || len(sc.LoadBalancingConfig) != 1 {
		t.Fatalf("service config %s: %v", st.ServiceConfig, err)
	}
	return sc.LoadBalancingConfig[0].Priority.Priorities
}

// TestConvertFlatParsesWithThePolicies parses Flat trees of every
// endpoint policy, with and without outlier detection, with the real
// policies' parsers (importing conn registers them all).
func TestConvertFlatParsesWithThePolicies(t *testing.T) {
	cla, err := eds.Parse([]byte(threeEndpoints))
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range []string{
		`[{"pick_first":{}}]`, `[{"pick_first":{"shuffleAddressList":true}}]`, `[{"round_robin":{}}]`,
		`[{"least_request_experimental":{"choiceCount":3}}]`, `[{"weighted_round_robin":{}}]`,
	} {
		for _, od := range []string{``, `{"interval":"5s","successRateEjection":{}}`} {
			c, err := new(eds.Namer).Convert(cla, eds.Policies{Endpoint: json.RawMessage(leaf), OutlierDetection: json.RawMessage(od), Flat: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := parseWithRegistry(c.State); err != nil {
				t.Errorf("%s with outlier detection %q: %v", leaf, od, err)
			}
		}
	}
	// A policy the registry refuses is refused in the tree: the parse is
	// real.
	c, err := new(eds.Namer).Convert(cla, eds.Policies{Endpoint: json.RawMessage(`[{"least_request_experimental":{"choiceCount":1}}]`), Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := parseWithRegistry(c.State); err == nil {
		t.Error("a choice count of 1 parses")
	}
}

// stateResolver publishes one state at Build.
type stateResolver struct{ st resolver.State }

func (r stateResolver) Scheme() string { return "flat-test" }

func (r stateResolver) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	if err := cc.UpdateState(r.st); err != nil {
		return nil, err
	}
	return r, nil
}

func (stateResolver) ResolveNow() {}
func (stateResolver) Close()      {}

// listeners starts n TCP listeners on loopback that accept and hold
// connections until the test ends, and returns their addresses.
func listeners(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	var lns []net.Listener
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	return addrs
}

// TestFlatTreesPickThroughAChannel runs Flat trees in a real channel:
// pick_first takes the priority's first endpoint whatever its locality,
// and round_robin spreads picks evenly over the priority's endpoints,
// locality weights (1 and 100 here) playing no part.
func TestFlatTreesPickThroughAChannel(t *testing.T) {
	addrs := listeners(t, 3)
	host := func(a string) (string, string) { h, p, _ := net.SplitHostPort(a); return h, p }
	ep := func(a string) string {
		h, p := host(a)
		return fmt.Sprintf(`{"endpoint": {"address": {"socketAddress": {"address": %q, "portValue": %s}}}}`, h, p)
	}
	doc := `{"clusterName": "c", "endpoints": [
	  {"locality": {"zone": "a"}, "loadBalancingWeight": 1, "lbEndpoints": [` + ep(addrs[0]) + `,` + ep(addrs[1]) + `]},
	  {"locality": {"zone": "b"}, "loadBalancingWeight": 100, "lbEndpoints": [` + ep(addrs[2]) + `]}]}`
	for _, tc := range []struct {
		leaf string
		want map[string]int // picks per address of 30
	}{
		{`[{"pick_first":{}}]`, map[string]int{addrs[0]: 30}},
		{`[{"round_robin":{}}]`, map[string]int{addrs[0]: 10, addrs[1]: 10, addrs[2]: 10}},
	} {
		t.Run(tc.leaf, func(t *testing.T) {
			st := mustConvert(t, new(eds.Namer), doc, eds.Policies{Endpoint: json.RawMessage(tc.leaf), Flat: true})
			ch, err := conn.New("flat-test:///c", conn.WithResolver(stateResolver{st}), conn.WithoutHealthCheck())
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
			defer cancel()
			// Wait until every endpoint the policy uses is READY, so that
			// the counts below are exact.
			for {
				seen := map[string]bool{}
				for range 30 {
					r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
					if err != nil {
						t.Fatal(err)
					}
					seen[r.SubConn.Address().Addr] = true
				}
				if len(seen) == len(tc.want) {
					break
				}
			}
			got := map[string]int{}
			for range 30 {
				r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
				if err != nil {
					t.Fatal(err)
				}
				got[r.SubConn.Address().Addr]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("picks %v, want %v", got, tc.want)
			}
		})
	}
}
