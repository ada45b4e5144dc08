package xds

import (
	"strconv"
	"strings"

	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/lb/wrr"
)

// clientSideWRRType is the message name of Envoy's
// ClientSideWeightedRoundRobin (gRFC A58's xDS form).
var clientSideWRRType = typeName(&cswrrv3.ClientSideWeightedRoundRobin{})

// clientSideWRRPolicy converts a ClientSideWeightedRoundRobin, as gRFC
// A58 and A52 convert it, to lbkit's weighted_round_robin with A58's
// fields, which weighs endpoints by their backends' load reports. Fields
// left unset keep A58's defaults. enable_oob_load_report true converts
// too, and the registry then refuses it (lbkit has no out-of-band
// reporting), which NACKs the cluster with that reason.
// metric_names_for_computing_utilization, slow_start_config and
// oob_reporting_config, which A58 does not define, are ignored and listed.
func clientSideWRRPolicy(m *cswrrv3.ClientSideWeightedRoundRobin, at string) chosenPolicy {
	var fields []string
	if v := m.GetEnableOobLoadReport(); v != nil {
		fields = append(fields, `"enableOobLoadReport":`+strconv.FormatBool(v.GetValue()))
	}
	for _, d := range []struct {
		name string
		d    *durationpb.Duration
	}{
		{"oobReportingPeriod", m.GetOobReportingPeriod()},
		{"blackoutPeriod", m.GetBlackoutPeriod()},
		{"weightExpirationPeriod", m.GetWeightExpirationPeriod()},
		{"weightUpdatePeriod", m.GetWeightUpdatePeriod()},
	} {
		if d.d != nil {
			b, _ := protojson.Marshal(d.d) // a JSON string such as "10s"; an out-of-range one is refused by the registry
			fields = append(fields, strconv.Quote(d.name)+":"+string(b))
		}
	}
	if v := m.GetErrorUtilizationPenalty(); v != nil {
		fields = append(fields, `"errorUtilizationPenalty":`+strconv.FormatFloat(float64(v.GetValue()), 'g', -1, 32))
	}
	c := chosenPolicy{leaf: policyList(wrr.Name, "{"+strings.Join(fields, ",")+"}")}
	const notA58 = ": ignored (not a field of gRFC A58's weighted_round_robin)"
	if len(m.GetMetricNamesForComputingUtilization()) > 0 {
		c.ignored = append(c.ignored, at+".metric_names_for_computing_utilization"+notA58)
	}
	if m.GetSlowStartConfig() != nil {
		c.ignored = append(c.ignored, at+".slow_start_config"+notA58)
	}
	if m.GetOobReportingConfig() != nil {
		c.ignored = append(c.ignored, at+".oob_reporting_config"+notA58)
	}
	return c
}
