package eds_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// sa returns a one-endpoint assignment whose socket_address has the given
// fields.
func sa(fields string) string {
	return `{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"lb_endpoints":[{"endpoint":{"address":{"socket_address":{` + fields + `}}}}]}]}`
}

// lbEndpoint returns a one-endpoint assignment whose LbEndpoint has the
// given fields besides a valid endpoint.
func lbEndpoint(fields string) string {
	return `{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"lb_endpoints":[{` + fields + `,"endpoint":{"address":{"socket_address":{"address":"10.0.0.1","port_value":80}}}}]}]}`
}

// locality returns an assignment with one locality holding the given fields.
func locality(fields string) string {
	return `{"cluster_name":"c","endpoints":[{` + fields + `}]}`
}

// localities returns an assignment with the given locality objects.
func localities(locs ...string) string {
	return `{"cluster_name":"c","endpoints":[` + strings.Join(locs, ",") + `]}`
}

func ep(addr string, port int) string {
	return fmt.Sprintf(`{"endpoint":{"address":{"socket_address":{"address":%q,"port_value":%d}}}}`, addr, port)
}

const portPath = "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value"
const addrPath = "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address"

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, in, path, msg string
	}{
		{"not JSON", `{"cluster_name":`, "", "invalid JSON at byte"},
		{"trailing data", `{"cluster_name":"c"} {}`, "", "invalid JSON"},
		{"invalid UTF-8", "{\"cluster_name\":\"\xff\"}", "", "UTF-8"},
		{"top level array", `[]`, "", "want an object, got an array"},
		{"top level null", `null`, "", "want an object, got null"},
		{"cluster_name missing", `{}`, "cluster_name", "required"},
		{"cluster_name empty", `{"cluster_name":""}`, "cluster_name", "required"},
		{"cluster_name number", `{"cluster_name":1}`, "cluster_name", "want a string, got a number"},
		{"both spellings", `{"cluster_name":"c","clusterName":"c"}`, "cluster_name", `given twice, as "cluster_name" and as "clusterName"`},
		{"duplicate key", `{"cluster_name":"c","cluster_name":"d"}`, "cluster_name", "field given twice"},
		{"endpoints object", `{"cluster_name":"c","endpoints":{}}`, "endpoints", "want an array, got an object"},
		{"locality entry not object", `{"cluster_name":"c","endpoints":[1]}`, "endpoints[0]", "want an object, got a number"},
		{"locality not object", locality(`"locality":"x"`), "endpoints[0].locality", "want an object, got a string"},
		{"region number", locality(`"locality":{"region":1}`), "endpoints[0].locality.region", "want a string"},
		{"sub_zone both spellings", locality(`"locality":{"sub_zone":"a","subZone":"a"}`), "endpoints[0].locality.sub_zone", "given twice"},
		{"lb_endpoints object", locality(`"lb_endpoints":{}`), "endpoints[0].lb_endpoints", "want an array"},
		{"lb_endpoints both spellings", locality(`"lb_endpoints":[],"lbEndpoints":[]`), "endpoints[0].lb_endpoints", "given twice"},
		{"locality weight not a number", locality(`"load_balancing_weight":"abc"`), "endpoints[0].load_balancing_weight", `string "abc" does not hold a number`},
		{"locality weight padded string", locality(`"load_balancing_weight":" 3"`), "endpoints[0].load_balancing_weight", "does not hold a number"},
		{"locality weight empty string", locality(`"load_balancing_weight":""`), "endpoints[0].load_balancing_weight", "does not hold a number"},
		{"locality weight wrapper object", locality(`"load_balancing_weight":{"value":3}`), "endpoints[0].load_balancing_weight", "want a number or a string holding a number, got an object"},
		{"locality weight bool", locality(`"loadBalancingWeight":true`), "endpoints[0].load_balancing_weight", "got a boolean"},
		{"locality weight negative", locality(`"load_balancing_weight":-1`), "endpoints[0].load_balancing_weight", "-1: negative"},
		{"locality weight too large", locality(`"load_balancing_weight":4294967296`), "endpoints[0].load_balancing_weight", "4294967296: too large"},
		{"locality weight huge exponent", locality(`"load_balancing_weight":1e400`), "endpoints[0].load_balancing_weight", "too large"},
		{"locality weight fraction", locality(`"load_balancing_weight":2.5`), "endpoints[0].load_balancing_weight", "2.5: not an integer"},
		{"locality weight tiny", locality(`"load_balancing_weight":"1e-3"`), "endpoints[0].load_balancing_weight", "not an integer"},
		{"priority too large", locality(`"priority":129`), "endpoints[0].priority", "129 out of range 0..128"},
		{"priority fraction", locality(`"priority":0.5`), "endpoints[0].priority", "not an integer"},
		{"priority gap", localities(`{"priority":0}`, `{"priority":2}`), "endpoints[1].priority", "2 leaves a gap: no locality has priority 1"},
		{"priority not from 0", localities(`{"priority":1}`), "endpoints[0].priority", "no locality has priority 0"},
		{"duplicate locality", localities(`{"locality":{"region":"r"},"priority":1}`, `{"priority":0}`, `{"locality":{"region":"r"},"priority":1}`), "endpoints[2].locality", `locality "r//" appears twice at priority 1 (first at endpoints[0])`},
		{"locality weights overflow", localities(`{"load_balancing_weight":4294967295,"locality":{"zone":"a"}}`, `{"load_balancing_weight":1,"locality":{"zone":"b"}}`), "endpoints[1].load_balancing_weight", "the locality weights at priority 0 sum to more than 4294967295"},
		{"load_balancer_endpoints", locality(`"load_balancer_endpoints":{"lb_endpoints":[]}`), "endpoints[0].load_balancer_endpoints", "not supported"},
		{"leds", locality(`"ledsClusterLocalityConfig":{}`), "endpoints[0].leds_cluster_locality_config", "not supported: LEDS"},
		{"endpoint weight 0", lbEndpoint(`"load_balancing_weight":0`), "endpoints[0].lb_endpoints[0].load_balancing_weight", "at least 1"},
		{"endpoint weights overflow", locality(`"load_balancing_weight":1,"lb_endpoints":[` + ep("10.0.0.1", 1) + `,{"load_balancing_weight":4294967295,"endpoint":{"address":{"socket_address":{"address":"10.0.0.2","port_value":1}}}}]`), "endpoints[0].lb_endpoints[1].load_balancing_weight", "sum to more than 4294967295"},
		{"health lower case", lbEndpoint(`"health_status":"healthy"`), "endpoints[0].lb_endpoints[0].health_status", `unknown value "healthy"`},
		{"health unknown number", lbEndpoint(`"health_status":9`), "endpoints[0].lb_endpoints[0].health_status", "unknown value 9 (want 0 to 5)"},
		{"health number string", lbEndpoint(`"healthStatus":"1"`), "endpoints[0].lb_endpoints[0].health_status", `unknown value "1"`},
		{"health bool", lbEndpoint(`"health_status":true`), "endpoints[0].lb_endpoints[0].health_status", "want an enum name string or number, got a boolean"},
		{"endpoint_name", lbEndpoint(`"endpoint_name":"a"`), "endpoints[0].lb_endpoints[0].endpoint_name", "not supported: named endpoints"},
		{"endpoint missing", locality(`"lb_endpoints":[{}]`), "endpoints[0].lb_endpoints[0].endpoint", "required"},
		{"endpoint null", locality(`"lb_endpoints":[{"endpoint":null}]`), "endpoints[0].lb_endpoints[0].endpoint", "required"},
		{"endpoint array", locality(`"lb_endpoints":[{"endpoint":[]}]`), "endpoints[0].lb_endpoints[0].endpoint", "want an object, got an array"},
		{"address missing", locality(`"lb_endpoints":[{"endpoint":{}}]`), "endpoints[0].lb_endpoints[0].endpoint.address", "required"},
		{"socket_address missing", locality(`"lb_endpoints":[{"endpoint":{"address":{}}}]`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address", "required"},
		{"pipe", locality(`"lb_endpoints":[{"endpoint":{"address":{"pipe":{"path":"/s"}}}}]`), "endpoints[0].lb_endpoints[0].endpoint.address.pipe", "not supported: only socket_address"},
		{"internal address", locality(`"lb_endpoints":[{"endpoint":{"address":{"envoyInternalAddress":{}}}}]`), "endpoints[0].lb_endpoints[0].endpoint.address.envoy_internal_address", "not supported"},
		{"additional addresses", locality(`"lb_endpoints":[{"endpoint":{"additional_addresses":[{}],"address":{}}}]`), "endpoints[0].lb_endpoints[0].endpoint.additional_addresses", "not supported"},
		{"port too large", sa(`"address":"10.0.0.1","port_value":70000`), portPath, "70000 out of range 1..65535"},
		{"port 0", sa(`"address":"10.0.0.1","port_value":0`), portPath, "0 out of range 1..65535"},
		{"port missing", sa(`"address":"10.0.0.1"`), portPath, "required"},
		{"port empty string", sa(`"address":"10.0.0.1","port_value":""`), portPath, "does not hold a number"},
		{"port above uint32", sa(`"address":"10.0.0.1","port_value":"99999999999"`), portPath, "too large"},
		{"port camel case", `{"clusterName":"c","endpoints":[{"loadBalancingWeight":1,"lbEndpoints":[{"endpoint":{"address":{"socketAddress":{"address":"10.0.0.1","portValue":70000}}}}]}]}`, portPath, "70000 out of range 1..65535"},
		{"named_port", sa(`"address":"10.0.0.1","named_port":"http"`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.named_port", "not supported"},
		{"resolver_name", sa(`"address":"a.test","port_value":1,"resolver_name":"dns"`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.resolver_name", "not supported: custom resolvers"},
		{"UDP", sa(`"address":"10.0.0.1","port_value":1,"protocol":"UDP"`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.protocol", "not supported: only TCP"},
		{"UDP by number", sa(`"address":"10.0.0.1","port_value":1,"protocol":1`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.protocol", "only TCP"},
		{"unknown protocol", sa(`"address":"10.0.0.1","port_value":1,"protocol":"SCTP"`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.protocol", `unknown value "SCTP"`},
		{"socket address without address", sa(`"port_value":1`), addrPath, "required"},
		{"address empty", sa(`"address":"","port_value":1`), addrPath, "required"},
		{"address number", sa(`"address":10,"port_value":1`), addrPath, "want a string, got a number"},
		{"address bad IPv4", sa(`"address":"10.0.0.256","port_value":1`), addrPath, `"10.0.0.256" is not an IP literal or a host name: the last label is all digits`},
		{"address bracketed", sa(`"address":"[::1]","port_value":1`), addrPath, "not an IP literal or a host name"},
		{"address with port", sa(`"address":"10.0.0.1:80","port_value":1`), addrPath, "not an IP literal or a host name"},
		{"address space", sa(`"address":"a b","port_value":1`), addrPath, `character ' ' not allowed`},
		{"address leading hyphen", sa(`"address":"-a.test","port_value":1`), addrPath, "begins or ends with '-'"},
		{"address empty label", sa(`"address":"a..test","port_value":1`), addrPath, "empty label"},
		{"address long label", sa(`"address":"` + strings.Repeat("a", 64) + `.test","port_value":1`), addrPath, "longer than 63 bytes"},
		{"duplicate address", locality(`"load_balancing_weight":1,"lb_endpoints":[` + ep("10.0.0.1", 80) + `,` + ep("10.0.0.2", 80) + `,` + ep("::ffff:10.0.0.1", 80) + `]`), "endpoints[0].lb_endpoints[2].endpoint.address.socket_address", "address 10.0.0.1:80 appears twice (first at endpoints[0].lb_endpoints[0].endpoint.address.socket_address)"},
		{"duplicate host name", localities(`{"lb_endpoints":[`+ep("A.test", 80)+`]}`, `{"priority":1,"lb_endpoints":[`+ep("a.TEST", 80)+`]}`), "endpoints[1].lb_endpoints[0].endpoint.address.socket_address", "appears twice"},
		{"named_endpoints", `{"cluster_name":"c","named_endpoints":{"a":{}}}`, "named_endpoints", "not supported"},
		{"policy not object", `{"cluster_name":"c","policy":3}`, "policy", "want an object"},
		{"drop_overloads object", `{"cluster_name":"c","policy":{"drop_overloads":{}}}`, "policy.drop_overloads", "want an array"},
		{"drop without category", `{"cluster_name":"c","policy":{"drop_overloads":[{"category":"x"},{"drop_percentage":{"numerator":1}}]}}`, "policy.drop_overloads[1].category", "required"},
		{"drop category empty", `{"cluster_name":"c","policy":{"drop_overloads":[{"category":""}]}}`, "policy.drop_overloads[0].category", "required"},
		{"drop denominator unknown", `{"cluster_name":"c","policy":{"dropOverloads":[{"category":"x","dropPercentage":{"numerator":1,"denominator":"BILLION"}}]}}`, "policy.drop_overloads[0].drop_percentage.denominator", `unknown value "BILLION"`},
		{"drop denominator number", `{"cluster_name":"c","policy":{"drop_overloads":[{"category":"x","drop_percentage":{"denominator":3}}]}}`, "policy.drop_overloads[0].drop_percentage.denominator", "unknown value 3 (want 0 to 2)"},
		{"drop numerator negative", `{"cluster_name":"c","policy":{"drop_overloads":[{"category":"x","drop_percentage":{"numerator":-1}}]}}`, "policy.drop_overloads[0].drop_percentage.numerator", "negative"},
		{"drop unknown field", `{"cluster_name":"c","policy":{"drop_overloads":[{"category":"x","share":1}]}}`, "policy.drop_overloads[0].share", "unknown field"},
		{"overprovisioning_factor not a number", `{"cluster_name":"c","policy":{"overprovisioningFactor":"x"}}`, "policy.overprovisioning_factor", "does not hold a number"},
		{"endpoint_stale_after", `{"cluster_name":"c","policy":{"endpoint_stale_after":"10s"}}`, "policy.endpoint_stale_after", "not supported"},
		{"weighted_priority_health", `{"cluster_name":"c","policy":{"weighted_priority_health":true}}`, "policy.weighted_priority_health", "not supported"},
		{"unknown top-level field", `{"cluster_name":"c","clusterNam":"d"}`, "clusterNam", "unknown field"},
		{"misspelled lb_endpoints", locality(`"load_balancing_weight":1,"lb_endpoint":[]`), "endpoints[0].lb_endpoint", "unknown field"},
		{"unknown policy field", `{"cluster_name":"c","policy":{"future":1}}`, "policy.future", "unknown field"},
		{"unknown field deep", sa(`"address":"10.0.0.1","port_value":1,"port":2`), "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port", "IgnoreUnknownFields"},
		{"syntax error after a field error", `{"cluster_name":1,"x":}`, "", "invalid JSON at byte 22"},
		{"duplicate key deep", sa(`"address":"10.0.0.1","address":"10.0.0.2","port_value":1`), addrPath, "field given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cla, err := eds.Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error at %q", tc.in, cla, tc.path)
			}
			var e *eds.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%s) error %v (%T) does not wrap *eds.Error", tc.in, err, err)
			}
			if e.Path != tc.path {
				t.Errorf("Parse(%s) error path %q, want %q (error: %v)", tc.in, e.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "eds: ") {
				t.Errorf("Parse(%s) error %q, want it to begin with \"eds: \" and contain %q", tc.in, err, tc.msg)
			}
		})
	}
}

// The example of the issue, exactly.
func TestPortErrorText(t *testing.T) {
	in := localities(`{"lb_endpoints":[`+ep("10.0.0.1", 80)+`]}`, `{"priority":1,"lb_endpoints":[`+ep("10.0.0.2", 70000)+`]}`)
	_, err := eds.Parse([]byte(in))
	const want = "eds: endpoints[1].lb_endpoints[0].endpoint.address.socket_address.port_value: 70000 out of range 1..65535"
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name, in string
		weight   uint32 // of the locality
	}{
		{"weight number", locality(`"load_balancing_weight":3`), 3},
		{"weight string", locality(`"load_balancing_weight":"3"`), 3},
		{"weight exponent", locality(`"load_balancing_weight":3e2`), 300},
		{"weight exponent string", locality(`"load_balancing_weight":"30E-1"`), 3},
		{"weight trailing zeros", locality(`"load_balancing_weight":3.000`), 3},
		{"weight max", locality(`"load_balancing_weight":4294967295`), 4294967295},
		{"weight null", locality(`"load_balancing_weight":null`), 0},
		{"weight 0 (the locality is left out)", locality(`"load_balancing_weight":0`), 0},
		{"weight string 0", locality(`"load_balancing_weight":"0"`), 0},
		{"overprovisioning_factor ignored (gRFC A27)", `{"cluster_name":"c","policy":{"overprovisioningFactor":140},"endpoints":[{}]}`, 0},
		{"overprovisioning_factor snake case", `{"cluster_name":"c","policy":{"overprovisioning_factor":"200"},"endpoints":[{}]}`, 0},
		{"unsupported fields at default", `{"cluster_name":"c","named_endpoints":{},"policy":{"drop_overloads":[],"weighted_priority_health":false,"overprovisioning_factor":null},"endpoints":[{"leds_cluster_locality_config":null}]}`, 0},
		{"protocol TCP by number", sa(`"address":"10.0.0.1","port_value":1,"protocol":0`), 1},
		{"resolver_name empty", sa(`"address":"10.0.0.1","port_value":1,"resolver_name":""`), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cla, err := eds.Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			if len(cla.Endpoints) != 1 || cla.Endpoints[0].LoadBalancingWeight != tc.weight {
				t.Errorf("Parse(%s) = %+v, want one locality of weight %d", tc.in, cla, tc.weight)
			}
		})
	}
}

// Unknown fields are ignored with ParseOptions.IgnoreUnknownFields, and
// only unknown ones: a known field still has its rules.
func TestIgnoreUnknownFields(t *testing.T) {
	in := `{"cluster_name":"c","future":{"a":[1]},"endpoints":[{"load_balancing_weight":1,"weight_v2":3,"lb_endpoints":[` + ep("10.0.0.1", 80) + `]}]}`
	if _, err := eds.Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), "future: unknown field") {
		t.Fatalf("Parse = %v, want an unknown field error at future", err)
	}
	cla, err := eds.ParseOptions{IgnoreUnknownFields: true}.Parse([]byte(in))
	if err != nil || len(cla.Endpoints) != 1 || len(cla.Endpoints[0].LbEndpoints) != 1 {
		t.Fatalf("ParseOptions{IgnoreUnknownFields: true}.Parse = %+v, %v; want one endpoint", cla, err)
	}
	bad := `{"cluster_name":"c","future":1,"endpoints":{}}`
	if _, err := (eds.ParseOptions{IgnoreUnknownFields: true}).Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "endpoints: want an array") {
		t.Fatalf("Parse(%s) = %v, want the error at endpoints", bad, err)
	}
}

func TestOddKeysInPaths(t *testing.T) {
	tests := []struct{ in, path string }{
		{`{"":1,"":2}`, `[""]`},
		{`{"cluster_name":"c","policy":{"a.b":1,"a.b":2}}`, `policy["a.b"]`},
	}
	for _, tc := range tests {
		_, err := eds.Parse([]byte(tc.in))
		var e *eds.Error
		if !errors.As(err, &e) || e.Path != tc.path {
			t.Errorf("Parse(%s) = %v, want an error at %s", tc.in, err, tc.path)
		}
	}
}
