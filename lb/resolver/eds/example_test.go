package eds_test

import (
	"fmt"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/weight"
)

// Two data centres: the primary with two weighted localities, the backup
// with one. The draining endpoint stays, marked (package draining): the
// policies give it no new requests while its locality has another
// endpoint, and its requests in flight finish on its connection.
func Example() {
	cla, err := eds.Parse([]byte(`{
	  "clusterName": "payments",
	  "endpoints": [
	    {"locality": {"region": "dc1", "zone": "a"}, "loadBalancingWeight": 3, "lbEndpoints": [
	      {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 443}}}, "loadBalancingWeight": 2},
	      {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 443}}}, "healthStatus": "DRAINING"}]},
	    {"locality": {"region": "dc1", "zone": "b"}, "loadBalancingWeight": 1, "lbEndpoints": [
	      {"endpoint": {"address": {"socketAddress": {"address": "10.0.1.1", "portValue": 443}}}}]},
	    {"locality": {"region": "dc2", "zone": "a"}, "loadBalancingWeight": 1, "priority": 1, "lbEndpoints": [
	      {"endpoint": {"address": {"socketAddress": {"address": "10.1.0.1", "portValue": 443}}}}]}
	  ]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var namer eds.Namer // keep it for the next assignment of this cluster
	state, err := namer.State(cla)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range state.Addresses {
		path, _ := hierarchy.Get(a)
		w, _ := weight.Get(a)
		fmt.Println(a.Addr, path, w, draining.Is(a))
	}
	fmt.Println(string(state.ServiceConfig))
	// Output:
	// 10.0.0.1:443 [priority-0-0 dc1/a/] 2 false
	// 10.0.0.2:443 [priority-0-0 dc1/a/] 1 true
	// 10.0.1.1:443 [priority-0-0 dc1/b/] 1 false
	// 10.1.0.1:443 [priority-1-0 dc2/a/] 1 false
	// {"loadBalancingConfig":[{"priority_experimental":{"children":{"priority-0-0":{"config":[{"weighted_target_experimental":{"targets":{"dc1/a/":{"weight":3,"childPolicy":[{"weighted_round_robin":{}}]},"dc1/b/":{"weight":1,"childPolicy":[{"weighted_round_robin":{}}]}}}}]},"priority-1-0":{"config":[{"weighted_target_experimental":{"targets":{"dc2/a/":{"weight":1,"childPolicy":[{"weighted_round_robin":{}}]}}}}]}},"priorities":["priority-0-0","priority-1-0"]}}]}
}

func ExampleParse_error() {
	_, err := eds.Parse([]byte(`{"cluster_name": "c", "endpoints": [{"lb_endpoints": [
	  {"endpoint": {"address": {"socket_address": {"address": "10.0.0.1", "port_value": 70000}}}}]}]}`))
	fmt.Println(err)
	// Output:
	// eds: endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: 70000 out of range 1..65535
}
