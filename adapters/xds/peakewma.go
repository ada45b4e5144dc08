package xds

import (
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/lb/peakewma"
)

// peakEwmaType is the message name of Envoy's contrib peak EWMA policy
// (extension envoy.load_balancing_policies.peak_ewma).
const peakEwmaType = "envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma"

// peakEwmaDescriptor describes PeakEwma as Envoy's
// contrib/envoy/extensions/load_balancing_policies/peak_ewma/v3alpha/peak_ewma.proto
// declares it. Its Go type lives in go-control-plane's contrib module, in
// no tagged release of it yet (docs/choices.md), so lbkit decodes the
// message from this descriptor, with protobuf's own decoder; the
// descriptor is registered nowhere.
var peakEwmaDescriptor = sync.OnceValues(func() (protoreflect.MessageDescriptor, error) {
	field := func(name string, number int32, typ string) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name:     proto.String(name),
			JsonName: proto.String(jsonName(name)),
			Number:   proto.Int32(number),
			Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			Type:     descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
			TypeName: proto.String(typ),
		}
	}
	const pkg = "envoy.extensions.load_balancing_policies.peak_ewma.v3alpha"
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:       proto.String("lbkit/adapters/xds/peak_ewma.proto"),
		Package:    proto.String(pkg),
		Dependency: []string{"google/protobuf/duration.proto", "google/protobuf/wrappers.proto"},
		Syntax:     proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("PeakEwma"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("decay_time", 1, ".google.protobuf.Duration"),
				field("aggregation_interval", 2, ".google.protobuf.Duration"),
				field("max_samples_per_host", 3, ".google.protobuf.UInt32Value"),
				field("default_rtt", 4, ".google.protobuf.Duration"),
				field("penalty_value", 5, ".google.protobuf.DoubleValue"),
			},
		}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		return nil, err
	}
	return fd.Messages().Get(0), nil
})

// jsonName is protoc's JSON name of a snake_case field.
func jsonName(name string) string {
	parts := strings.Split(name, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// peakEwmaPolicy converts Envoy's PeakEwma, found at at, to lbkit's
// peak_ewma_experimental: decay_time and default_rtt are lbkit's
// decayTime and defaultRtt (unset: lbkit's defaults, which are Envoy's);
// aggregation_interval and max_samples_per_host, which size Envoy's
// per-worker sample buffers, and penalty_value, Envoy's cost of a host
// without measurements (lbkit starts one from the median of the others'),
// are ignored and listed. A message that does not decode, or a duration
// that is invalid, negative or zero, is an error; the registry then
// refuses a duration outside lbkit's range.
func peakEwmaPolicy(typed *anypb.Any, at string) (chosenPolicy, *ResourceError) {
	md, err := peakEwmaDescriptor()
	if err != nil {
		return chosenPolicy{}, fieldErrorf(at, "cannot describe %s: %v", peakEwmaType, err)
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(typed.GetValue(), m); err != nil {
		return chosenPolicy{}, fieldErrorf(at, "cannot decode %s: %v", peakEwmaType, err)
	}
	var fields []string
	for _, f := range []struct{ proto, json string }{{"decay_time", "decayTime"}, {"default_rtt", "defaultRtt"}} {
		fd := md.Fields().ByName(protoreflect.Name(f.proto))
		if !m.Has(fd) {
			continue
		}
		d := durationOf(m.Get(fd).Message())
		s, rerr := durationJSON(d, at+"."+f.proto, true)
		if rerr != nil {
			return chosenPolicy{}, rerr
		}
		fields = append(fields, `"`+f.json+`":"`+s+`"`)
	}
	c := chosenPolicy{leaf: policyList(peakewma.Name, "{"+strings.Join(fields, ",")+"}")}
	for _, f := range []struct{ name, why string }{
		{"aggregation_interval", "it paces Envoy's merging of per-worker samples; lbkit updates each endpoint's estimate at once"},
		{"max_samples_per_host", "it sizes Envoy's per-worker sample buffers, which lbkit does not have"},
		{"penalty_value", "Envoy's cost of a host without measurements; lbkit starts one from the median of the others' estimates (docs/choices.md)"},
	} {
		if m.Has(md.Fields().ByName(protoreflect.Name(f.name))) {
			c.ignored = append(c.ignored, at+"."+f.name+": ignored ("+f.why+")")
		}
	}
	return c, nil
}

// durationOf reads a google.protobuf.Duration decoded as a dynamic message.
func durationOf(m protoreflect.Message) *durationpb.Duration {
	f := m.Descriptor().Fields()
	return &durationpb.Duration{
		Seconds: m.Get(f.ByName("seconds")).Int(),
		Nanos:   int32(m.Get(f.ByName("nanos")).Int()),
	}
}
