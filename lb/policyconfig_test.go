package lb_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/weightedtarget"
	"github.com/lbkit/lbkit/lb/wrr"
)

// TestTypedConfigParsesAsItsJSON is the property that makes typed configs
// safe: a random tree of in-tree policies' typed configs, valid or not,
// (the seven of the channel's built-ins and the two consistent-hash ones)
// parses to the same ParsedPolicy, or fails with the same error (message
// and JSON path), as the JSON a user would write for it. The JSON is
// written here by hand from the same draws, from the rule each typed
// config documents (a zero field is a field left out), not by the code
// under test.
func TestTypedConfigParsesAsItsJSON(t *testing.T) {
	errorsSeen, okSeen := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		typed, text := drawPolicy(rt, 3)
		fromJSON, jsonErr := lb.ParsePolicyList([]byte("[" + text + "]"))
		fromTyped, typedErr := lb.ParsePolicyConfig(typed)
		switch {
		case jsonErr != nil || typedErr != nil:
			if fmt.Sprint(jsonErr) != fmt.Sprint(typedErr) {
				rt.Fatalf("JSON %s\nJSON error:  %v\ntyped error: %v", text, jsonErr, typedErr)
			}
			var ce *lb.ConfigError
			if !errors.As(typedErr, &ce) {
				rt.Fatalf("typed error %v is not a *lb.ConfigError", typedErr)
			}
			errorsSeen++
		case !reflect.DeepEqual(fromJSON, fromTyped):
			rt.Fatalf("JSON %s\nparsed from JSON:  %#v\nparsed from typed: %#v", text, fromJSON, fromTyped)
		default:
			okSeen++
		}
	})
	if errorsSeen == 0 || okSeen == 0 {
		t.Errorf("the draws gave %d errors and %d valid configs; want both", errorsSeen, okSeen)
	}
}

// drawPolicy draws one policy's typed config and its JSON list entry
// {"name": {...}}; parents draw children down to depth.
func drawPolicy(t *rapid.T, depth int) (lb.PolicyConfig, string) {
	kinds := []string{"pick_first", "round_robin", "wrr", "least_request", "ring_hash", "maglev", "peak_ewma"}
	if depth > 0 {
		kinds = append(kinds, "outlier", "priority", "weighted_target")
	}
	var (
		typed  lb.PolicyConfig
		fields []string
	)
	switch kind := rapid.SampledFrom(kinds).Draw(t, "kind"); kind {
	case "pick_first":
		c := pickfirst.Config{ShuffleAddressList: rapid.Bool().Draw(t, "shuffle")}
		fields = boolField(fields, "shuffleAddressList", c.ShuffleAddressList)
		typed = c
	case "round_robin":
		typed = roundrobin.Config{}
	case "wrr":
		c := wrr.Config{RandomStart: rapid.Bool().Draw(t, "randomStart")}
		fields = boolField(fields, "randomStart", c.RandomStart)
		durations := []time.Duration{0, 50 * time.Millisecond, 10 * time.Second, -time.Second}
		lr := wrr.LoadReportConfig{
			BlackoutPeriod:          rapid.SampledFrom(append(durations, wrr.NoBlackout)).Draw(t, "blackout"),
			WeightExpirationPeriod:  rapid.SampledFrom(durations).Draw(t, "expiration"),
			WeightUpdatePeriod:      rapid.SampledFrom(durations).Draw(t, "update"),
			ErrorUtilizationPenalty: rapid.SampledFrom([]float64{0, wrr.NoErrorPenalty, 1.5, -2}).Draw(t, "penalty"),
		}
		c.LoadReports = lr
		blackout := namedDuration{"blackoutPeriod", lr.BlackoutPeriod}
		if lr.BlackoutPeriod == wrr.NoBlackout {
			fields = append(fields, `"blackoutPeriod":"0s"`)
			blackout.d = 0
		}
		fields = durationFields(fields, blackout, namedDuration{"weightExpirationPeriod", lr.WeightExpirationPeriod},
			namedDuration{"weightUpdatePeriod", lr.WeightUpdatePeriod})
		switch p := lr.ErrorUtilizationPenalty; p {
		case 0:
		case wrr.NoErrorPenalty:
			fields = append(fields, `"errorUtilizationPenalty":0`)
		default:
			fields = append(fields, `"errorUtilizationPenalty":`+strconv.FormatFloat(p, 'g', -1, 64))
		}
		typed = c
	case "least_request":
		c := leastrequest.Config{ChoiceCount: rapid.Uint32Range(0, 12).Draw(t, "choiceCount")}
		fields = uintField(fields, "choiceCount", c.ChoiceCount)
		typed = c
	case "ring_hash":
		sizes := rapid.SampledFrom([]uint64{0, 1, 1024, 5000, 9_000_000, 1 << 33})
		c := consistenthash.RingHashConfig{
			MinRingSize: sizes.Draw(t, "minRingSize"), MaxRingSize: sizes.Draw(t, "maxRingSize"),
			RequestHashHeader: drawHeader(t), HashBalanceFactor: rapid.SampledFrom([]uint32{0, 50, 150}).Draw(t, "factor"),
			EntriesPerWeight: rapid.SampledFrom([]uint64{0, 1, 100, 5000, 9_000_000}).Draw(t, "entriesPerWeight"),
		}
		fields = uint64Field(fields, "minRingSize", c.MinRingSize)
		fields = uint64Field(fields, "maxRingSize", c.MaxRingSize)
		fields = stringField(fields, "requestHashHeader", c.RequestHashHeader)
		fields = uintField(fields, "hashBalanceFactor", c.HashBalanceFactor)
		fields = uint64Field(fields, "entriesPerWeight", c.EntriesPerWeight)
		typed = c
	case "maglev":
		c := consistenthash.MaglevConfig{
			TableSize:         rapid.SampledFrom([]uint64{0, 7, 65536, 65537, 5000011, 5000012}).Draw(t, "tableSize"),
			RequestHashHeader: drawHeader(t), HashBalanceFactor: rapid.SampledFrom([]uint32{0, 50, 150}).Draw(t, "factor"),
		}
		fields = uint64Field(fields, "tableSize", c.TableSize)
		fields = stringField(fields, "requestHashHeader", c.RequestHashHeader)
		fields = uintField(fields, "hashBalanceFactor", c.HashBalanceFactor)
		typed = c
	case "peak_ewma":
		durations := []time.Duration{0, time.Nanosecond, 50 * time.Millisecond, 10 * time.Second, -time.Second, 2 * time.Hour}
		c := peakewma.Config{
			DecayTime:      rapid.SampledFrom(durations).Draw(t, "decayTime"),
			DefaultRTT:     rapid.SampledFrom(durations).Draw(t, "defaultRtt"),
			FailurePenalty: rapid.SampledFrom(durations).Draw(t, "failurePenalty"),
		}
		fields = durationFields(fields, namedDuration{"decayTime", c.DecayTime}, namedDuration{"defaultRtt", c.DefaultRTT}, namedDuration{"failurePenalty", c.FailurePenalty})
		typed = c
	case "outlier":
		typed, fields = drawOutlier(t, depth)
	case "priority":
		typed, fields = drawPriority(t, depth)
	case "weighted_target":
		typed, fields = drawWeightedTarget(t, depth)
	}
	return typed, "{" + strconv.Quote(typed.PolicyName()) + ":{" + strings.Join(fields, ",") + "}}"
}

// namedDuration is a duration field of a config and its JSON name.
type namedDuration struct {
	name string
	d    time.Duration
}

// durationFields appends the JSON of each non-zero duration to fields.
func durationFields(fields []string, ds ...namedDuration) []string {
	for _, d := range ds {
		if d.d != 0 {
			fields = append(fields, strconv.Quote(d.name)+":"+strconv.Quote(protoDuration(d.d)))
		}
	}
	return fields
}

// drawChild draws a parent's child: nil (left out of the JSON) now and
// then, else a policy whose JSON is a list of one entry.
func drawChild(t *rapid.T, depth int, label string) (lb.PolicyConfig, string) {
	if rapid.IntRange(0, 7).Draw(t, label+"Nil") == 0 {
		return nil, ""
	}
	p, text := drawPolicy(t, depth-1)
	return p, "[" + text + "]"
}

func drawOutlier(t *rapid.T, depth int) (lb.PolicyConfig, []string) {
	durations := []time.Duration{0, time.Nanosecond, 1500 * time.Millisecond, 10 * time.Second, -time.Second, time.Hour + 7, math.MaxInt64, math.MinInt64}
	percent := rapid.Uint32Range(0, 120)
	p := outlierdetection.Policy{Detection: outlierdetection.Detection{
		Interval:           rapid.SampledFrom(durations).Draw(t, "interval"),
		BaseEjectionTime:   rapid.SampledFrom(durations).Draw(t, "base"),
		MaxEjectionTime:    rapid.SampledFrom(durations).Draw(t, "max"),
		MaxEjectionPercent: percent.Draw(t, "maxPercent"),
	}}
	fields := durationFields(nil, namedDuration{"interval", p.Interval}, namedDuration{"baseEjectionTime", p.BaseEjectionTime}, namedDuration{"maxEjectionTime", p.MaxEjectionTime})
	fields = uintField(fields, "maxEjectionPercent", p.MaxEjectionPercent)
	if rapid.Bool().Draw(t, "successRate") {
		sr := &outlierdetection.SuccessRateEjection{
			StdevFactor: rapid.Uint32Range(0, 3000).Draw(t, "stdev"), EnforcementPercentage: percent.Draw(t, "srEnforce"),
			MinimumHosts: rapid.Uint32Range(0, 6).Draw(t, "srHosts"), RequestVolume: rapid.Uint32Range(0, 200).Draw(t, "srVolume"),
		}
		var sub []string
		sub = uintField(sub, "stdevFactor", sr.StdevFactor)
		sub = uintField(sub, "enforcementPercentage", sr.EnforcementPercentage)
		sub = uintField(sub, "minimumHosts", sr.MinimumHosts)
		sub = uintField(sub, "requestVolume", sr.RequestVolume)
		p.SuccessRateEjection = sr
		fields = append(fields, `"successRateEjection":{`+strings.Join(sub, ",")+"}")
	}
	if rapid.Bool().Draw(t, "failurePercentage") {
		fp := &outlierdetection.FailurePercentageEjection{
			Threshold: percent.Draw(t, "threshold"), EnforcementPercentage: percent.Draw(t, "fpEnforce"),
			MinimumHosts: rapid.Uint32Range(0, 6).Draw(t, "fpHosts"), RequestVolume: rapid.Uint32Range(0, 200).Draw(t, "fpVolume"),
		}
		var sub []string
		sub = uintField(sub, "threshold", fp.Threshold)
		sub = uintField(sub, "enforcementPercentage", fp.EnforcementPercentage)
		sub = uintField(sub, "minimumHosts", fp.MinimumHosts)
		sub = uintField(sub, "requestVolume", fp.RequestVolume)
		p.FailurePercentageEjection = fp
		fields = append(fields, `"failurePercentageEjection":{`+strings.Join(sub, ",")+"}")
	}
	var child string
	p.ChildPolicy, child = drawChild(t, depth, "child")
	if child != "" {
		fields = append(fields, `"childPolicy":`+child)
	}
	return p, fields
}

// childNames are the names priority and weighted_target children draw
// from; "x" is only ever listed in priorities, to draw that mistake.
var childNames = []string{"a", "b", "c"}

func drawPriority(t *rapid.T, depth int) (lb.PolicyConfig, []string) {
	var p priority.Policy
	var children []string
	for _, name := range childNames {
		if !rapid.Bool().Draw(t, "has"+name) {
			continue
		}
		if p.Children == nil {
			p.Children = map[string]priority.ChildPolicy{}
		}
		var c priority.ChildPolicy
		var cfg string
		c.Config, cfg = drawChild(t, depth, name)
		c.IgnoreReresolutionRequests = rapid.Bool().Draw(t, "ignore"+name)
		var sub []string
		if cfg != "" {
			sub = append(sub, `"config":`+cfg)
		}
		sub = boolField(sub, "ignoreReresolutionRequests", c.IgnoreReresolutionRequests)
		p.Children[name] = c
		children = append(children, strconv.Quote(name)+":{"+strings.Join(sub, ",")+"}")
	}
	p.Priorities = rapid.SliceOfN(rapid.SampledFrom(append(slices.Clone(childNames), "x")), 0, 4).Draw(t, "priorities")
	var fields []string
	if len(children) > 0 {
		fields = append(fields, `"children":{`+strings.Join(children, ",")+"}")
	}
	if len(p.Priorities) > 0 {
		quoted := make([]string, len(p.Priorities))
		for i, n := range p.Priorities {
			quoted[i] = strconv.Quote(n)
		}
		fields = append(fields, `"priorities":[`+strings.Join(quoted, ",")+"]")
	}
	return p, fields
}

func drawWeightedTarget(t *rapid.T, depth int) (lb.PolicyConfig, []string) {
	var p weightedtarget.Policy
	var targets []string
	for _, name := range childNames {
		if !rapid.Bool().Draw(t, "has"+name) {
			continue
		}
		if p.Targets == nil {
			p.Targets = map[string]weightedtarget.TargetPolicy{}
		}
		tp := weightedtarget.TargetPolicy{Weight: rapid.Uint32Range(0, 3).Draw(t, "weight"+name)}
		var child string
		tp.ChildPolicy, child = drawChild(t, depth, name)
		sub := []string{`"weight":` + strconv.FormatUint(uint64(tp.Weight), 10)}
		if child != "" {
			sub = append(sub, `"childPolicy":`+child)
		}
		p.Targets[name] = tp
		targets = append(targets, strconv.Quote(name)+":{"+strings.Join(sub, ",")+"}")
	}
	var fields []string
	if len(targets) > 0 {
		fields = append(fields, `"targets":{`+strings.Join(targets, ",")+"}")
	}
	return p, fields
}

// boolField appends "name":true when v is set: false is left out.
func boolField(fields []string, name string, v bool) []string {
	if !v {
		return fields
	}
	return append(fields, strconv.Quote(name)+":true")
}

// uintField appends "name":v when v is not 0: 0 is left out.
func uintField(fields []string, name string, v uint32) []string {
	if v == 0 {
		return fields
	}
	return append(fields, strconv.Quote(name)+":"+strconv.FormatUint(uint64(v), 10))
}

// uint64Field appends "name":v when v is not 0: 0 is left out.
func uint64Field(fields []string, name string, v uint64) []string {
	if v == 0 {
		return fields
	}
	return append(fields, strconv.Quote(name)+":"+strconv.FormatUint(v, 10))
}

// stringField appends "name":"v" when v is not empty: "" is left out.
func stringField(fields []string, name, v string) []string {
	if v == "" {
		return fields
	}
	return append(fields, strconv.Quote(name)+":"+strconv.Quote(v))
}

// drawHeader draws a request hash header: none, valid ones (upper case is
// lowered) and invalid ones.
func drawHeader(t *rapid.T) string {
	return rapid.SampledFrom([]string{"", "x-user", "X-User", "bad header", "key-bin"}).Draw(t, "header")
}

// protoDuration writes d as proto3 JSON does, independently of
// lb.FormatDuration: seconds, and the fraction without trailing zeros
// (error messages quote the duration as written).
func protoDuration(d time.Duration) string {
	sign := ""
	whole, frac := int64(d/time.Second), int64(d%time.Second)
	if d < 0 {
		sign, whole, frac = "-", -whole, -frac
	}
	if frac == 0 {
		return fmt.Sprintf("%s%ds", sign, whole)
	}
	return strings.TrimRight(fmt.Sprintf("%s%d.%09d", sign, whole, frac), "0") + "s"
}

// TestFormatDuration pins the proto3 form typed configs write.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Nanosecond: "0.000000001s", 1500 * time.Millisecond: "1.5s", 10 * time.Second: "10s",
		-time.Second - time.Nanosecond: "-1.000000001s", math.MinInt64: "-9223372036.854775808s",
	} {
		if got := lb.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%d) = %q, want %q", d, got, want)
		}
		if back, err := lb.ParseDuration([]byte(strconv.Quote(lb.FormatDuration(d)))); d != math.MinInt64 && (err != nil || back != d) {
			t.Errorf("ParseDuration(FormatDuration(%d)) = %v, %v", d, back, err)
		}
		if got := lb.FormatNonZeroDuration(d); (d == 0 && got != "") || (d != 0 && got != want) {
			t.Errorf("FormatNonZeroDuration(%d) = %q, want %q (\"\" for zero)", d, got, want)
		}
	}
}

// TestTypedConfigMistakes: a nil typed config and one that does not
// marshal to an object are errors naming the mistake, never a panic.
func TestTypedConfigMistakes(t *testing.T) {
	if _, err := lb.ParsePolicyConfig(nil); err == nil || !strings.Contains(err.Error(), "nil PolicyConfig") {
		t.Errorf("ParsePolicyConfig(nil) = %v, want the nil PolicyConfig error", err)
	}
	if _, err := lb.MarshalServiceConfig(notAnObject(3)); err == nil || !strings.Contains(err.Error(), `"not_an_object" config marshals to a number`) {
		t.Errorf("MarshalServiceConfig(number) = %v, want the not-an-object error", err)
	}
	got, err := lb.MarshalServiceConfig(outlierdetection.Policy{ChildPolicy: roundrobin.Config{}})
	if want := `{"loadBalancingConfig":[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}]}}]}`; err != nil || got != want {
		t.Errorf("MarshalServiceConfig = %s, %v; want %s", got, err, want)
	}
}

// notAnObject is a PolicyConfig that marshals to a number.
type notAnObject int

func (notAnObject) PolicyName() string { return "not_an_object" }
