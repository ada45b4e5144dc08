package lb

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PolicyConfig is a policy's config written as a Go value instead of JSON,
// such as roundrobin.Config{} or an outlierdetection.Policy holding one.
// It is not a second way to configure a policy: it stands for the JSON
// object json.Marshal makes of it, which is parsed by the policy's own
// parser ([ParseConfig]) exactly as if the user had written that JSON, so a
// typed config is accepted, rejected and reported (with the same JSON
// paths) exactly as its JSON is. Every in-tree policy offers one; a zero
// field stands for the JSON field left out, and so takes the policy's
// default.
//
// A PolicyConfig must be a value that json.Marshal turns into the JSON
// object its policy's parser reads (through json tags or a MarshalJSON
// method); PolicyName returns the name the policy is registered under. A
// PolicyConfig is read, never changed, by the functions that take one, and
// may be shared between goroutines if its own fields allow it.
type PolicyConfig interface {
	// PolicyName returns the name of the policy the config is for, the
	// key of its entry in a loadBalancingConfig list.
	PolicyName() string
}

var errNilPolicyConfig = errors.New("nil PolicyConfig: want a policy's config such as roundrobin.Config{}")

// MarshalPolicyList returns the JSON policy list of one entry that p stands
// for, [{"<p.PolicyName()>": <json.Marshal(p)>}], the form of a
// loadBalancingConfig value and of a parent's child policy. A nil p, a
// config that cannot be marshalled or one that is not a JSON object is an
// error naming the policy.
func MarshalPolicyList(p PolicyConfig) (json.RawMessage, error) {
	if p == nil {
		return nil, errNilPolicyConfig
	}
	name := p.PolicyName()
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("marshalling the %q config: %w", name, err)
	}
	if jsonKind(body) != "an object" {
		return nil, fmt.Errorf("the %q config marshals to %s, want an object", name, jsonKind(body))
	}
	key, _ := json.Marshal(name) // a string always marshals
	out := make([]byte, 0, len(body)+len(key)+4)
	out = append(out, "[{"...)
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, body...)
	return append(out, "}]"...), nil
}

// MarshalServiceConfig returns the service config JSON
// {"loadBalancingConfig": [{"<name>": {...}}]} that p stands for
// ([MarshalPolicyList]), for the APIs that take a service config as text.
// (grpc-go knows lbkit's policies under other names: the grpc-go adapter's
// ServiceConfig writes its form.)
func MarshalServiceConfig(p PolicyConfig) (string, error) {
	list, err := MarshalPolicyList(p)
	if err != nil {
		return "", err
	}
	return `{"loadBalancingConfig":` + string(list) + `}`, nil
}

// ParsePolicyConfig parses p against [DefaultRegistry]; see
// [Registry.ParsePolicyConfig].
func ParsePolicyConfig(p PolicyConfig) (*ParsedPolicy, error) {
	return defaultRegistry.ParsePolicyConfig(p)
}

// ParsePolicyConfig parses the policy list p stands for
// ([MarshalPolicyList]) with [Registry.ParsePolicyList]: the result and
// the error, with its JSON path relative to the list ("[0].priority_experimental.priorities[1]"),
// are those of the JSON. A p that cannot be marshalled is an error too.
func (r *Registry) ParsePolicyConfig(p PolicyConfig) (*ParsedPolicy, error) {
	list, err := MarshalPolicyList(p)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return r.ParsePolicyList(list)
}

// ChildPolicyJSON is the JSON of a parent's typed child policy field, for
// the MarshalJSON methods of parents' PolicyConfigs: the policy list
// [MarshalPolicyList] makes of p, or nil (a field left out, which the
// parent's parser reports as missing) when p is nil.
func ChildPolicyJSON(p PolicyConfig) (json.RawMessage, error) {
	if p == nil {
		return nil, nil
	}
	return MarshalPolicyList(p)
}

// FormatNonZeroDuration returns [FormatDuration] of d, or "" for zero: the
// value of a duration field of a [PolicyConfig]'s JSON tagged omitempty, so
// that a zero field is left out and takes the policy's default.
func FormatNonZeroDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return FormatDuration(d)
}

// FormatDuration returns d in proto3 JSON's google.protobuf.Duration form,
// the form [ParseDuration] reads: seconds with the suffix "s" and up to
// nine fractional digits, without trailing zeros, such as "10s", "0.5s" or
// "-1.000000001s".
func FormatDuration(d time.Duration) string {
	var b strings.Builder
	u := uint64(d)
	if d < 0 {
		b.WriteByte('-')
		u = -u // two's complement: also right for the smallest Duration
	}
	b.WriteString(strconv.FormatUint(u/uint64(time.Second), 10))
	if frac := u % uint64(time.Second); frac != 0 {
		digits := strconv.FormatUint(frac+uint64(time.Second), 10)[1:] // nine digits, leading zeros kept
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(digits, "0"))
	}
	b.WriteByte('s')
	return b.String()
}
