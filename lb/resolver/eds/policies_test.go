package eds_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

const twoPriorities = `{"clusterName": "c", "endpoints": [
  {"locality": {"region": "r", "zone": "a"}, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}}]},
  {"locality": {"region": "r", "zone": "b"}, "priority": 1, "loadBalancingWeight": 1, "lbEndpoints": [
    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 80}}}}]}]}`

func TestConvertPlacesThePolicies(t *testing.T) {
	cla, err := eds.Parse([]byte(twoPriorities))
	if err != nil {
		t.Fatal(err)
	}
	var n eds.Namer
	c, err := n.Convert(cla, eds.Policies{
		Endpoint:         json.RawMessage(`[{"least_request_experimental": {"choiceCount": 3}}]`),
		OutlierDetection: json.RawMessage(`{"interval": "5s"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"loadBalancingConfig":[{"priority_experimental":{"children":{` +
		`"priority-0-0":{"config":[{"outlier_detection_experimental":{"childPolicy":[{"weighted_target_experimental":{"targets":{"r/a/":{"weight":1,"childPolicy":[{"least_request_experimental":{"choiceCount":3}}]}}}}],"interval":"5s"}}]},` +
		`"priority-1-0":{"config":[{"outlier_detection_experimental":{"childPolicy":[{"weighted_target_experimental":{"targets":{"r/b/":{"weight":1,"childPolicy":[{"least_request_experimental":{"choiceCount":3}}]}}}}],"interval":"5s"}}]}},` +
		`"priorities":["priority-0-0","priority-1-0"]}}]}`
	if got := string(c.State.ServiceConfig); got != want {
		t.Errorf("service config:\n got %s\nwant %s", got, want)
	}
	if c.State.Degraded != nil || len(c.LeftOut) != 0 || c.NotUsable != 0 {
		t.Errorf("Convert reports %v, %v, %d for a full tree", c.State.Degraded, c.LeftOut, c.NotUsable)
	}
}

func TestConvertZeroPoliciesIsState(t *testing.T) {
	cla, err := eds.Parse([]byte(twoPriorities))
	if err != nil {
		t.Fatal(err)
	}
	var a, b eds.Namer
	st, err := a.State(cla)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Convert(cla, eds.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	if string(st.ServiceConfig) != string(c.State.ServiceConfig) || len(st.Addresses) != len(c.State.Addresses) {
		t.Errorf("State and Convert with zero Policies differ:\n%s\n%s", st.ServiceConfig, c.State.ServiceConfig)
	}
}

func TestConvertReportsAnEmptyTree(t *testing.T) {
	cla, err := eds.Parse([]byte(`{"clusterName": "c", "endpoints": [{"locality": {"region": "r"}, "lbEndpoints": [
	  {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var n eds.Namer
	c, err := n.Convert(cla, eds.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Degraded == nil || !strings.Contains(c.State.Degraded.Error(), "no load_balancing_weight") || len(c.LeftOut) != 1 {
		t.Errorf("State.Degraded = %v, LeftOut = %q; want the locality without a weight named", c.State.Degraded, c.LeftOut)
	}
}

func TestConvertRefusesABadOutlierDetectionObject(t *testing.T) {
	cla, err := eds.Parse([]byte(twoPriorities))
	if err != nil {
		t.Fatal(err)
	}
	var n eds.Namer
	for _, od := range []string{`[1]`, `null`, `{"childPolicy": []}`} {
		if _, err := n.Convert(cla, eds.Policies{OutlierDetection: json.RawMessage(od)}); err == nil || !strings.Contains(err.Error(), "Policies.OutlierDetection") {
			t.Errorf("OutlierDetection %s: err = %v, want one naming Policies.OutlierDetection", od, err)
		}
	}
	// n is unchanged: the first good conversion mints priority-0-0.
	c, err := n.Convert(cla, eds.Policies{})
	if err != nil || !strings.Contains(string(c.State.ServiceConfig), `"priority-0-0"`) {
		t.Errorf("after refused conversions: %v, %s", err, c.State.ServiceConfig)
	}
}

// A locality whose load_balancing_weight is 0 is left out of the tree,
// as one without a weight is (gRFC A27; grpc-go ignores it), and the
// assignment is accepted; so is Envoy's default overprovisioning_factor,
// which gRPC ignores.
func TestZeroWeightLocalityIsLeftOutAndOverprovisioningIgnored(t *testing.T) {
	cla, err := eds.Parse([]byte(`{"clusterName": "c", "policy": {"overprovisioningFactor": 140}, "endpoints": [
	  {"locality": {"region": "r", "zone": "a"}, "loadBalancingWeight": 0, "lbEndpoints": [
	    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}}]},
	  {"locality": {"region": "r", "zone": "b"}, "loadBalancingWeight": 2, "lbEndpoints": [
	    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 80}}}}]}]}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var n eds.Namer
	c, err := n.Convert(cla, eds.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.State.Addresses) != 1 || c.State.Addresses[0].Addr != "10.0.0.2:80" {
		t.Errorf("addresses %v, want only 10.0.0.2:80", c.State.Addresses)
	}
	if want := []string{`endpoints[0] (locality "r/a/", priority 0): no load_balancing_weight`}; len(c.LeftOut) != 1 || c.LeftOut[0] != want[0] {
		t.Errorf("LeftOut = %q, want %q", c.LeftOut, want)
	}
	if strings.Contains(string(c.State.ServiceConfig), `"r/a/"`) {
		t.Errorf("the zero-weight locality is in the config: %s", c.State.ServiceConfig)
	}
}
