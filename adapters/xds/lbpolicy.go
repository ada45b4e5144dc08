package xds

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	least_requestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	pick_firstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ring_hashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	round_robinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrr_localityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// maxPolicyDepth is how deep load_balancing_policy may nest: gRFC A52
// calls a configuration needing "more than 16 levels of recursion"
// invalid. The top-level list is at depth 0, each WrrLocality's
// endpoint_picking_policy one deeper.
const maxPolicyDepth = 16

// The message names (an Any's type_url after its last '/') of the policies
// lbkit converts.
var (
	wrrLocalityType  = typeName(&wrr_localityv3.WrrLocality{})
	roundRobinType   = typeName(&round_robinv3.RoundRobin{})
	leastRequestType = typeName(&least_requestv3.LeastRequest{})
	pickFirstType    = typeName(&pick_firstv3.PickFirst{})
	typedStructType  = typeName(&xdstypev3.TypedStruct{})
	udpaStructType   = typeName(&udpatypev1.TypedStruct{})
)

func typeName(m proto.Message) string { return string(m.ProtoReflect().Descriptor().FullName()) }

// chosenPolicy is what a LoadBalancingPolicy converts to.
type chosenPolicy struct {
	// leaf is the endpoint policy, a loadBalancingConfig list of one
	// policy that lbkit's registry parses.
	leaf json.RawMessage
	// locality says that the policy was wrapped in WrrLocality: the tree
	// picks a locality by weight first (eds.Policies.Flat unset).
	locality bool
	// ignored lists the skipped entries and the fields of the chosen
	// policies that a gRFC says to ignore, as "field: reason".
	ignored []string
}

// loadBalancingPolicy converts lbp, found at field, as gRFC A52's xDS LB
// policy registry does: the first entry of a type lbkit supports is
// chosen; entries of other types are skipped; a chosen entry that does not
// convert, or a list without a supported entry, is an error. depth is how
// many WrrLocality wrappers lbp sits in.
func loadBalancingPolicy(lbp *clusterv3.LoadBalancingPolicy, field string, depth int) (chosenPolicy, *ResourceError) {
	if depth > maxPolicyDepth {
		return chosenPolicy{}, fieldErrorf(field, "nested more than %d levels deep (gRFC A52)", maxPolicyDepth)
	}
	var skipped, ignored []string
	for i, p := range lbp.GetPolicies() {
		at := field + ".policies[" + strconv.Itoa(i) + "].typed_extension_config.typed_config"
		typed := p.GetTypedExtensionConfig().GetTypedConfig()
		c, ok, err := convertPolicy(typed, at, depth)
		if err != nil {
			return chosenPolicy{}, err
		}
		if !ok {
			skipped = append(skipped, describeType(typed))
			ignored = append(ignored, at+": skipped (gRFC A52): "+describeType(typed)+" is not a policy lbkit supports")
			continue
		}
		c.ignored = append(ignored, c.ignored...)
		return c, nil
	}
	if len(skipped) == 0 {
		return chosenPolicy{}, fieldErrorf(field+".policies", "empty: no policy to choose (gRFC A52)")
	}
	return chosenPolicy{}, fieldErrorf(field+".policies", "no policy lbkit supports (gRFC A52): skipped %s; lbkit supports %s",
		strings.Join(skipped, ", "), supportedTypes)
}

// supportedTypes names what loadBalancingPolicy converts, for errors.
var supportedTypes = strings.Join([]string{wrrLocalityType, roundRobinType, leastRequestType, ringHashType, maglevType, pickFirstType, clientSideWRRType, peakEwmaType}, ", ") +
	", and " + typedStructType + " or " + udpaStructType + " naming a registered policy"

// describeType names typed's type for a message: its type_url, a
// TypedStruct's with the type it carries.
func describeType(typed *anypb.Any) string {
	switch {
	case typed == nil:
		return "an entry without typed_config"
	case isTypedStruct(typed):
		if url, _, err := typedStruct(typed); err == nil {
			return fmt.Sprintf("%s of %q (no such policy is registered)", messageName(typed.GetTypeUrl()), url)
		}
	}
	return strconv.Quote(typed.GetTypeUrl())
}

// messageName is the part of a type URL after its last '/': the message's
// full name for an Any, the policy's name for a TypedStruct (gRFC A52).
func messageName(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

func isTypedStruct(typed *anypb.Any) bool {
	n := messageName(typed.GetTypeUrl())
	return n == typedStructType || n == udpaStructType
}

// convertPolicy converts one entry's typed_config, found at at. ok is
// false for a type lbkit does not support, which the caller skips.
func convertPolicy(typed *anypb.Any, at string, depth int) (c chosenPolicy, ok bool, _ *ResourceError) {
	var err *ResourceError
	switch n := messageName(typed.GetTypeUrl()); {
	case typed == nil:
		return chosenPolicy{}, false, nil
	case n == wrrLocalityType:
		var m wrr_localityv3.WrrLocality
		if err = decode(typed, &m, at); err == nil {
			c, err = wrrLocality(&m, at, depth)
		}
	case n == roundRobinType:
		var m round_robinv3.RoundRobin
		if err = decode(typed, &m, at); err == nil {
			c, err = roundRobinPolicy(&m, at)
		}
	case n == leastRequestType:
		var m least_requestv3.LeastRequest
		if err = decode(typed, &m, at); err == nil {
			c, err = leastRequestPolicy(&m, at)
		}
	case n == ringHashType:
		var m ring_hashv3.RingHash
		if err = decode(typed, &m, at); err == nil {
			c, err = ringHashPolicy(&m, at)
		}
	case n == maglevType:
		var m maglevv3.Maglev
		if err = decode(typed, &m, at); err == nil {
			c, err = maglevPolicy(&m, at)
		}
	case n == clientSideWRRType:
		var m cswrrv3.ClientSideWeightedRoundRobin
		if err = decode(typed, &m, at); err == nil {
			c = clientSideWRRPolicy(&m, at)
		}
	case n == peakEwmaType:
		c, err = peakEwmaPolicy(typed, at)
	case n == pickFirstType:
		var m pick_firstv3.PickFirst
		if err = decode(typed, &m, at); err == nil {
			c.leaf = policyList(pickfirst.Name, fmt.Sprintf(`{"shuffleAddressList":%t}`, m.GetShuffleAddressList()))
		}
	case isTypedStruct(typed):
		if c.leaf, err = customPolicy(typed, at); err == nil && c.leaf == nil {
			return chosenPolicy{}, false, nil
		}
		at += ".value"
	default:
		return chosenPolicy{}, false, nil
	}
	if err != nil {
		return chosenPolicy{}, true, err
	}
	// gRFC A52: the converted config must parse with the LB policy
	// registry, or the Cluster is NACKed. Fields the policy does not know
	// (only a TypedStruct can carry them) are ignored, as gRPC's JSON
	// configs ignore them, and listed.
	parsed, perr := lb.ParsePolicyList(c.leaf)
	if perr != nil {
		return chosenPolicy{}, true, fieldErrorf(at, "lbkit refuses the converted config %s: %w", c.leaf, perr)
	}
	for _, u := range parsed.Unknown {
		c.ignored = append(c.ignored, fmt.Sprintf("%s: %s: a field %s does not know; ignored", at, u, parsed.Name))
	}
	return c, true, nil
}

// decode unmarshals typed's value into m.
func decode(typed *anypb.Any, m proto.Message, at string) *ResourceError {
	if err := proto.Unmarshal(typed.GetValue(), m); err != nil {
		return fieldErrorf(at, "cannot decode %s: %v", typeName(m), err)
	}
	return nil
}

// policyList returns [{"name":config}].
func policyList(name, config string) json.RawMessage {
	return json.RawMessage(`[{` + strconv.Quote(name) + `:` + config + `}]`)
}

// wrrLocality converts a WrrLocality: its endpoint_picking_policy, one
// level deeper, under the locality-picking layer. A WrrLocality inside
// another adds nothing: in gRPC, the inner xds_wrr_locality_experimental
// gets the addresses of one locality and so builds a weighted target of
// one target, which picks what its child picks.
func wrrLocality(m *wrr_localityv3.WrrLocality, at string, depth int) (chosenPolicy, *ResourceError) {
	c, err := loadBalancingPolicy(m.GetEndpointPickingPolicy(), at+".endpoint_picking_policy", depth+1)
	if err != nil {
		return chosenPolicy{}, err
	}
	c.locality = true
	return c, nil
}

// roundRobinPolicy converts a RoundRobin to lbkit's round_robin, which,
// as gRPC's, ignores endpoint weights. gRFC A52 gives RoundRobin no
// configuration; lbkit maps slow_start_config to its slow start
// (docs/choices.md), and ignores locality_lb_config.
func roundRobinPolicy(m *round_robinv3.RoundRobin, at string) (chosenPolicy, *ResourceError) {
	c := chosenPolicy{leaf: policyList(roundrobin.Name, `{}`)}
	if ssc := m.GetSlowStartConfig(); ssc != nil {
		ss, ignored, err := slowStart(ssc, at+".slow_start_config")
		if err != nil {
			return chosenPolicy{}, err
		}
		c.leaf = policyList(roundrobin.Name, withSlowStart("{}", ss))
		c.ignored = append(c.ignored, ignored...)
	}
	if m.GetLocalityLbConfig() != nil {
		c.ignored = append(c.ignored, at+".locality_lb_config: ignored (gRFC A52: RoundRobin has no configuration in gRPC; locality weights count only under WrrLocality)")
	}
	return c, nil
}

// leastRequestPolicy converts a LeastRequest (gRFC A52, with A48's
// choice_count rules).
func leastRequestPolicy(m *least_requestv3.LeastRequest, at string) (chosenPolicy, *ResourceError) {
	c, err := leastRequestChosen(m, at)
	if err != nil {
		return chosenPolicy{}, err
	}
	const onlyChoiceCount = "ignored (gRFC A52: only choice_count is converted"
	if m.GetLocalityLbConfig() != nil {
		c.ignored = append(c.ignored, at+".locality_lb_config: "+onlyChoiceCount+"; locality weights count only under WrrLocality)")
	}
	//lint:ignore SA1019 a control plane may still send the deprecated enable_full_scan
	if m.GetEnableFullScan() != nil {
		c.ignored = append(c.ignored, at+".enable_full_scan: "+onlyChoiceCount+"; lbkit samples choice_count endpoints)")
	}
	if m.GetSelectionMethod() != least_requestv3.LeastRequest_N_CHOICES {
		c.ignored = append(c.ignored, at+".selection_method: "+onlyChoiceCount+"; lbkit samples choice_count endpoints)")
	}
	return c, nil
}

// customPolicy converts a TypedStruct (gRFC A52): the policy named by the
// part of its type_url after the last '/', with its value as the config
// object as it is. A name not registered in lbkit's default registry
// gives a nil leaf: the entry is skipped.
func customPolicy(typed *anypb.Any, at string) (json.RawMessage, *ResourceError) {
	url, value, err := typedStruct(typed)
	if err != nil {
		return nil, fieldErrorf(at, "cannot decode %s: %v", messageName(typed.GetTypeUrl()), err)
	}
	name := messageName(url)
	if name == "" || lb.Get(name) == nil {
		return nil, nil
	}
	// encoding/json, not protojson, whose output varies from run to run:
	// equal clusters must give byte-identical service configs.
	config, err := json.Marshal(value.AsMap())
	if err != nil {
		return nil, fieldErrorf(at+".value", "cannot encode as JSON: %v", err)
	}
	return policyList(name, string(config)), nil
}

// typedStruct decodes either TypedStruct.
func typedStruct(typed *anypb.Any) (url string, value *structpb.Struct, err error) {
	if messageName(typed.GetTypeUrl()) == udpaStructType {
		var m udpatypev1.TypedStruct
		err = proto.Unmarshal(typed.GetValue(), &m)
		return m.GetTypeUrl(), m.GetValue(), err
	}
	var m xdstypev3.TypedStruct
	err = proto.Unmarshal(typed.GetValue(), &m)
	return m.GetTypeUrl(), m.GetValue(), err
}
