package eds_test

import (
	"encoding/json"
	"testing"

	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/weight"
)

// gRFC A76: an endpoint's metadata filter_metadata["envoy.lb"].hash_key
// becomes its address's hash key; a hash_key that is not a string is
// ignored, as Envoy ignores it, and so is every other piece of metadata.
// In a flat tree (ring_hash's) each weight is multiplied by its
// locality's (gRFC A42).
func TestHashKeyAndFlatWeights(t *testing.T) {
	cla, err := eds.Parse([]byte(`{"clusterName": "c", "endpoints": [
	  {"locality": {"zone": "a"}, "loadBalancingWeight": 3, "lbEndpoints": [
	    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 80}}}, "loadBalancingWeight": 2,
	     "metadata": {"filterMetadata": {"envoy.lb": {"hash_key": "pod-0", "other": [1, {"x": null}]}, "acme": {"hash_key": "no"}},
	                  "typedFilterMetadata": {"x": {"@type": "whatever"}}}},
	    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 80}}},
	     "metadata": {"filter_metadata": {"envoy.lb": {"hash_key": 7}}}}]},
	  {"locality": {"zone": "b"}, "loadBalancingWeight": 2, "lbEndpoints": [
	    {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.3", "portValue": 80}}}, "loadBalancingWeight": 3}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cla.Endpoints[0].LbEndpoints[0].HashKey; got != "pod-0" {
		t.Fatalf("HashKey %q, want pod-0", got)
	}
	var n eds.Namer
	c, err := n.Convert(cla, eds.Policies{Endpoint: json.RawMessage(`[{"ring_hash_experimental":{}}]`), Flat: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key    string
		weight uint32
	}{{"pod-0", 6}, {"", 3}, {"", 6}}
	for i, a := range c.State.Addresses {
		w, _ := weight.Get(a)
		if hashkey.Get(a) != want[i].key || w != want[i].weight {
			t.Errorf("%s: hash key %q, weight %d; want %q, %d", a.Addr, hashkey.Get(a), w, want[i].key, want[i].weight)
		}
	}
}
