package lb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lbkit/lbkit/lb/internal/jsonx"
)

// ConfigError is a configuration error at a JSON path, such as
// `loadBalancingConfig[0].priority_experimental.children["p1"].config:
// empty policy list`.
type ConfigError struct {
	// Path locates the offending value from the root of the parsed
	// document; empty means the root itself.
	Path string
	// Err is the reason.
	Err error
}

// Error returns "path: reason".
func (e *ConfigError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *ConfigError) Unwrap() error { return e.Err }

// ConfigErrorf returns a [*ConfigError] at path with a formatted reason.
func ConfigErrorf(path, format string, args ...any) error {
	return &ConfigError{Path: path, Err: fmt.Errorf(format, args...)}
}

// PrefixConfigError returns err with prefix put in front of its path: a
// parent's parser uses it on a child's error. A field name is joined with a
// dot, an index or map key ("[0]", `["p1"]`) without. A nil err stays nil;
// an error that is not a *ConfigError gets prefix as its path.
func PrefixConfigError(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return &ConfigError{Path: prefix, Err: err}
	}
	return &ConfigError{Path: JoinPath(prefix, ce.Path), Err: ce.Err}
}

// JoinPath joins two JSON path fragments: "a" and "b" give "a.b"; "a" and
// "[0]" give "a[0]"; an empty side gives the other.
func JoinPath(prefix, rest string) string {
	switch {
	case prefix == "":
		return rest
	case rest == "":
		return prefix
	case strings.HasPrefix(rest, "["):
		return prefix + rest
	default:
		return prefix + "." + rest
	}
}

// KeyPath returns the path fragment for a map key, such as `["p1"]`.
func KeyPath(key string) string { return "[" + strconv.Quote(key) + "]" }

// ParsedPolicy is the policy chosen from a loadBalancingConfig list.
type ParsedPolicy struct {
	// Name is the chosen policy's name.
	Name string
	// Builder builds the chosen policy.
	Builder Builder
	// Config is its parsed config, as [ParseConfig] returns it; nil if
	// the builder has no parser.
	Config Config
	// Unknown lists the JSON paths, relative to the list, of the fields
	// of the chosen policy's config that the policy does not know and
	// ignored, as [ParseConfig] reports them.
	Unknown []string
}

var errEmptyList = errors.New("empty policy list")

// ParseLoadBalancingConfig parses a service config's loadBalancingConfig
// value with [ParsePolicyList] against [DefaultRegistry]; error paths start
// at "loadBalancingConfig".
func ParseLoadBalancingConfig(raw json.RawMessage) (*ParsedPolicy, error) {
	return defaultRegistry.ParseLoadBalancingConfig(raw)
}

// ParseLoadBalancingConfig parses a service config's loadBalancingConfig
// value with [Registry.ParsePolicyList]; error paths and
// [ParsedPolicy.Unknown] start at "loadBalancingConfig".
func (r *Registry) ParseLoadBalancingConfig(raw json.RawMessage) (*ParsedPolicy, error) {
	p, err := r.ParsePolicyList(raw)
	if err != nil {
		return nil, PrefixConfigError("loadBalancingConfig", err)
	}
	for i, u := range p.Unknown {
		p.Unknown[i] = JoinPath("loadBalancingConfig", u)
	}
	return p, nil
}

// ParsePolicyList parses a list of policies against [DefaultRegistry]; see
// [Registry.ParsePolicyList].
func ParsePolicyList(raw json.RawMessage) (*ParsedPolicy, error) {
	return defaultRegistry.ParsePolicyList(raw)
}

// ParsePolicyList parses a list of policies in gRPC's loadBalancingConfig
// form, [{"name": {config}}, ...], as used at the top of a service config and
// for child policies, looking policies up in r. The rules:
//   - the list must be a non-empty JSON array;
//   - entries are tried in order; an entry must be an object with exactly
//     one key, the policy name;
//   - entries naming an unregistered policy are skipped;
//   - the first registered policy wins and its config is parsed by its
//     builder; if that config is invalid the whole list is invalid (no
//     fallback to a later entry);
//   - entries after the winner are not examined;
//   - a list with no registered policy is an error.
//
// Errors are [*ConfigError]s whose path is relative to the list, such as
// `[0].priority_experimental.children["p1"].config`.
func (r *Registry) ParsePolicyList(raw json.RawMessage) (*ParsedPolicy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, &ConfigError{Err: errEmptyList}
	}
	entries, err := decodeArray(raw)
	if err != nil {
		return nil, objectError(raw, "a JSON array of policies", err)
	}
	if len(entries) == 0 {
		return nil, &ConfigError{Err: errEmptyList}
	}
	var skipped []string
	for i, entry := range entries {
		at := "[" + strconv.Itoa(i) + "]"
		obj, _, err := decodeObject(entry)
		if err != nil {
			return nil, PrefixConfigError(at, objectError(entry, "an object with one policy name", err))
		}
		if len(obj) != 1 {
			return nil, ConfigErrorf(at, "want exactly one policy name in an entry, got %d keys", len(obj))
		}
		for name, cfg := range obj {
			b := r.Get(name)
			if b == nil {
				skipped = append(skipped, strconv.Quote(name))
				continue
			}
			p := &ParsedPolicy{Name: name, Builder: b}
			var unknown []string
			if p.Config, unknown, err = ParseConfig(b, cfg); err != nil {
				return nil, PrefixConfigError(at+"."+name, err)
			}
			for _, u := range unknown {
				p.Unknown = append(p.Unknown, JoinPath(at+"."+name, u))
			}
			return p, nil
		}
	}
	return nil, ConfigErrorf("", "no registered policy in list (unregistered: %s; registered: %s)",
		strings.Join(skipped, ", "), strings.Join(r.Names(), ", "))
}

// simpleConfigParser is the parser of a builder written before
// [ConfigParser] listed unknown fields.
type simpleConfigParser interface {
	ParseConfig(raw json.RawMessage) (Config, error)
}

// ParseConfig parses raw, a config of b's policy, and lists the fields it
// ignored because the policy does not know them, with paths relative to
// the policy's object. It is how lbkit parses every policy's config (the
// policy lists of [Registry.ParsePolicyList], the channel, lbtest and the
// grpc-go adapter), whatever the builder offers:
//   - a [ConfigParser] parses raw and lists its unknown fields;
//   - a builder whose only parser is ParseConfig(raw json.RawMessage)
//     (Config, error) parses raw; it cannot say which fields it ignored,
//     so none are listed;
//   - a builder with no parser takes no config: the config is nil, and
//     every key of raw (when raw is an object) is unknown.
//
// An error is the parser's, for its caller to prefix; the config is then
// nil.
func ParseConfig(b Builder, raw json.RawMessage) (Config, []string, error) {
	switch p := b.(type) {
	case ConfigParser:
		c, unknown, err := p.ParseConfig(raw)
		if err != nil {
			return nil, nil, err
		}
		return c, unknown, nil
	case simpleConfigParser:
		c, err := p.ParseConfig(raw)
		if err != nil {
			return nil, nil, err
		}
		return c, nil, nil
	}
	if o, err := ParseConfigObject(raw); err == nil {
		return nil, o.Unknown(), nil
	}
	return nil, nil, nil
}

// ParseConfigWith is the body of a [ConfigParser]: it parses raw as a
// config object ([ParseConfigObject]), lets parse read the policy's fields
// from it, and returns parse's config with the fields nothing read
// ([ConfigObject.Unknown]). On an error, from either, the config is nil
// (not a typed zero C), as ConfigParser asks.
//
//	func (Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
//		return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (Config, error) {
//			var c Config
//			err := obj.Decode(&c.Verbose, "verbose")
//			return c, err
//		})
//	}
func ParseConfigWith[C any](raw json.RawMessage, parse func(ConfigObject) (C, error)) (Config, []string, error) {
	obj, err := ParseConfigObject(raw)
	if err != nil {
		return nil, nil, err
	}
	c, err := parse(obj)
	if err != nil {
		return nil, nil, err
	}
	return c, obj.Unknown(), nil
}

// decodeObject decodes a JSON object into its raw fields and its keys in
// document order, with the rules of the one JSON toolkit (package
// lb/internal/jsonx): a key given twice is an error, as in EDS files.
func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, []string, error) {
	d := jsonx.New(raw)
	if d.Peek() != jsonx.Object {
		return nil, nil, errors.New("not an object")
	}
	obj := make(map[string]json.RawMessage)
	var keys []string
	err := d.Object(func(key []byte) error {
		v, err := d.Raw()
		obj[string(key)] = v
		keys = append(keys, string(key))
		return err
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		return nil, nil, err
	}
	return obj, keys, nil
}

// objectError converts an error of decodeObject into a [*ConfigError]: at
// its path for a key given twice, "invalid JSON at byte N: reason" for
// input that is not JSON (truncated, say), else "want what, got <kind>".
func objectError(raw json.RawMessage, what string, err error) error {
	var je *jsonx.Error
	switch {
	case errors.As(err, &je) && je.Syntax:
		return &ConfigError{Err: je}
	case je != nil && je.Path != "":
		return &ConfigError{Path: je.Path, Err: je.Err}
	}
	return ConfigErrorf("", "want %s, got %s", what, jsonKind(raw))
}

// shiftOffset returns err with n added to its offset when it is a syntax
// error ([jsonx.Error]): the offset in the input before n bytes were
// trimmed from its start.
func shiftOffset(err error, n int) error {
	var je *jsonx.Error
	if n == 0 || !errors.As(err, &je) || !je.Syntax {
		return err
	}
	shifted := *je
	shifted.Offset += n
	return &shifted
}

// jsonKind names the JSON type of raw for error messages: "an object", "an
// array", "a string", "a boolean", "null", "a number", "invalid JSON" or
// "nothing".
func jsonKind(raw json.RawMessage) string {
	d := jsonx.New(raw)
	k := d.Peek()
	if k == jsonx.Invalid {
		if len(bytes.TrimSpace(raw)) == 0 {
			return "nothing"
		}
		return "invalid JSON"
	}
	if d.Skip() != nil || d.End() != nil {
		return "invalid JSON"
	}
	return k.String()
}

// ConfigObject is a policy's JSON config object, decoded field by field with
// case-sensitive names (as proto3 JSON requires) so that every error names
// its field. A key given twice is an error. Unknown fields are ignored;
// [ConfigObject.Unknown] lists them for a [ConfigParser], with those of
// the objects and policy lists read through [ConfigObject.ObjectAt] and
// [ConfigObject.PolicyList]. Copies of a ConfigObject share what was asked
// for; it is not safe for concurrent use.
type ConfigObject struct {
	fields map[string]json.RawMessage
	keys   []string
	read   *objectReads // shared by copies
}

// objectReads is what a parser has read of a [ConfigObject].
type objectReads struct {
	// asked holds the names passed to Raw or Decode.
	asked map[string]bool
	// nested lists the objects and policy lists read inside the object,
	// in the order they were read.
	nested []nestedUnknown
}

// nestedUnknown is an object or a policy list read at path inside a
// [ConfigObject]: unknown returns its unknown fields, relative to it.
type nestedUnknown struct {
	path    string
	unknown func() []string
}

// Unknown returns the fields no parser has read: in document order, the
// keys never asked for by [ConfigObject.Raw] or [ConfigObject.Decode]
// (under any of the names given), then, in the order they were read, the
// unknown fields of the objects read with [ConfigObject.ObjectAt] and of
// the policies read with [ConfigObject.PolicyList], with paths relative
// to o. After a parser has read its fields, these are the fields it does
// not know.
func (o ConfigObject) Unknown() []string {
	if o.read == nil { // the zero ConfigObject
		return nil
	}
	var unknown []string
	for _, k := range o.keys {
		if !o.read.asked[k] {
			unknown = append(unknown, k)
		}
	}
	for _, n := range o.read.nested {
		for _, u := range n.unknown() {
			unknown = append(unknown, JoinPath(n.path, u))
		}
	}
	return unknown
}

// ParseConfigObject decodes raw as a JSON object. An empty raw or null is
// the empty object, as when a policy is named with no config.
func ParseConfigObject(raw json.RawMessage) (ConfigObject, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return ConfigObject{read: &objectReads{asked: map[string]bool{}}}, nil
	}
	obj, keys, err := decodeObject(trimmed)
	if err != nil {
		lead := len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace))
		return ConfigObject{}, objectError(trimmed, "a JSON object", shiftOffset(err, lead))
	}
	return ConfigObject{fields: obj, keys: keys, read: &objectReads{asked: make(map[string]bool, len(keys))}}, nil
}

// ObjectAt decodes raw, a value found inside o at path (relative to o,
// such as "successRateEjection" or `children["p1"]`), as a config object
// ([ParseConfigObject]); an error is prefixed with path. The unknown
// fields of the returned object, whenever they are asked for, are part of
// o's ([ConfigObject.Unknown]) under path.
func (o ConfigObject) ObjectAt(path string, raw json.RawMessage) (ConfigObject, error) {
	sub, err := ParseConfigObject(raw)
	if err != nil {
		return ConfigObject{}, PrefixConfigError(path, err)
	}
	if o.read != nil {
		o.read.nested = append(o.read.nested, nestedUnknown{path: path, unknown: sub.Unknown})
	}
	return sub, nil
}

// PolicyList parses the first present field among names as a policy list
// ([Registry.ParsePolicyList]) against reg, or [DefaultRegistry] when reg
// is nil. A missing field is an empty list, and so an error at names[0];
// any error is prefixed with the field's name. The chosen policy's unknown
// fields are part of o's ([ConfigObject.Unknown]) under the field's name.
func (o ConfigObject) PolicyList(reg *Registry, names ...string) (*ParsedPolicy, error) {
	list, field, ok := o.Raw(names...)
	if !ok && len(names) > 0 {
		field = names[0]
	}
	if reg == nil {
		reg = defaultRegistry
	}
	p, err := reg.ParsePolicyList(list)
	if err != nil {
		return nil, PrefixConfigError(field, err)
	}
	if o.read != nil {
		unknown := slices.Clone(p.Unknown)
		o.read.nested = append(o.read.nested, nestedUnknown{path: field, unknown: func() []string { return unknown }})
	}
	return p, nil
}

// Raw returns the raw value of the first present field among names (for
// example a lowerCamelCase name and its snake_case twin), the name found,
// and whether one was present.
func (o ConfigObject) Raw(names ...string) (json.RawMessage, string, bool) {
	if o.read != nil {
		for _, n := range names {
			o.read.asked[n] = true
		}
	}
	for _, n := range names {
		if v, ok := o.fields[n]; ok {
			return v, n, true
		}
	}
	return nil, "", false
}

// Decode decodes the first present field among names into dst, leaving dst
// unchanged when none is present or the value is null. A value of the
// wrong type is a [*ConfigError] at the field's name.
func (o ConfigObject) Decode(dst any, names ...string) error {
	v, name, ok := o.Raw(names...)
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	// v passed the toolkit's rules when the object was parsed (a key given
	// twice anywhere inside is an error there); encoding/json only converts
	// it to dst's type.
	if err := json.Unmarshal(v, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return ConfigErrorf(JoinPath(name, te.Field), "want %s, got %s", te.Type, te.Value)
		}
		return ConfigErrorf(name, "%v", err)
	}
	return nil
}

// ParseUint32 parses a proto3 JSON uint32 of at least lowest: a JSON number,
// or a string holding one, whose value is a whole number from lowest to
// 4294967295 (a fraction or exponent is accepted when the value is whole:
// "1e2" is 100, "3.0" is 3). Null or an empty raw is the default value, 0,
// and so an error when lowest > 0. An error is a [*ConfigError] with an
// empty path, for the caller to prefix.
func ParseUint32(raw json.RawMessage, lowest uint32) (uint32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		if lowest > 0 {
			return 0, ConfigErrorf("", "must be >= %d, got 0", lowest)
		}
		return 0, nil
	}
	text := string(raw)
	if raw[0] == '"' {
		var err error
		if text, err = decodeString(raw); err != nil {
			return 0, ConfigErrorf("", "want an integer, got invalid JSON")
		}
		if !jsonx.IsNumber(text) {
			return 0, ConfigErrorf("", "want an integer, got %q", text)
		}
	} else if !jsonx.IsNumber(text) {
		return 0, ConfigErrorf("", "want an integer, got %s", jsonKind(raw))
	}
	if n, err := strconv.ParseUint(text, 10, 64); err == nil {
		switch {
		case n > math.MaxUint32:
			return 0, ConfigErrorf("", "must be <= %d, got %s", uint32(math.MaxUint32), text)
		case n < uint64(lowest):
			return 0, ConfigErrorf("", "must be >= %d, got %s", lowest, text)
		}
		return uint32(n), nil
	}
	// A fraction, an exponent, a sign or more than 64 bits: float64 holds
	// every whole number up to 2^53 exactly, far beyond 2^32-1.
	f, _ := strconv.ParseFloat(text, 64) // ±Inf on overflow, checked below
	switch {
	case f < float64(lowest) || f < 0:
		return 0, ConfigErrorf("", "must be >= %d, got %s", lowest, text)
	case f > math.MaxUint32:
		return 0, ConfigErrorf("", "must be <= %d, got %s", uint32(math.MaxUint32), text)
	case f != math.Trunc(f):
		return 0, ConfigErrorf("", "want an integer, got %s", text)
	}
	return uint32(f), nil
}

// decodeString decodes raw, one JSON string.
func decodeString(raw json.RawMessage) (string, error) {
	d := jsonx.New(raw)
	s, err := d.String()
	if err == nil {
		err = d.End()
	}
	return s, err
}

// decodeArray decodes raw, one JSON array, into its raw elements.
func decodeArray(raw json.RawMessage) ([]json.RawMessage, error) {
	d := jsonx.New(raw)
	var elems []json.RawMessage
	err := d.Array(func(int) error {
		v, err := d.Raw()
		elems = append(elems, v)
		return err
	})
	if err == nil {
		err = d.End()
	}
	return elems, err
}

// ConfigOf returns the config of type C that an update carries as its
// [ClientConnState.BalancerConfig]: c itself if it is a C, what it points
// to if it is a non-nil *C, and the zero C (the policy's default) for nil or
// a nil *C. Any other type is an error, prefixed with policy and wrapping
// [ErrBadResolverState], that names the type found and the type wanted.
func ConfigOf[C any](policy string, c Config) (C, error) {
	var zero C
	switch c := c.(type) {
	case nil:
		return zero, nil
	case C:
		return c, nil
	case *C:
		if c == nil {
			return zero, nil
		}
		return *c, nil
	default:
		return zero, fmt.Errorf("%s: config of type %T, want %T: %w", policy, c, zero, ErrBadResolverState)
	}
}
