package route

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// Parse parses the JSON form of a [Config] (see there) and compiles it
// ([Compile]). It returns the table and the JSON paths of the fields it
// does not know and ignored. Every error is an [*lb.ConfigError] whose path
// locates the field from the object's root, such as
// `virtualHosts[0].routes[2].match.safeRegex: invalid RE2 regex: ...`.
func Parse(raw json.RawMessage) (*Table, []string, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Read(obj)
	if err != nil {
		return nil, nil, err
	}
	t, err := Compile(cfg)
	if err != nil {
		return nil, nil, err
	}
	return t, obj.Unknown(), nil
}

// Read reads a [Config] from its JSON object, for a parent policy's parser
// that holds a route configuration as one of its fields (whose unknown
// fields then become obj's). It checks the JSON's shape (types, a key
// given twice) but not the rules [Compile] checks. Error paths are relative
// to obj.
func Read(obj lb.ConfigObject) (*Config, error) {
	cfg := &Config{}
	if err := obj.Decode(&cfg.Name, "name"); err != nil {
		return nil, err
	}
	err := eachObject(obj, "virtualHosts", func(at string, o lb.ConfigObject) error {
		vh, err := readVirtualHost(o)
		cfg.VirtualHosts = append(cfg.VirtualHosts, vh)
		return lb.PrefixConfigError(at, err)
	})
	return cfg, err
}

// eachObject reads the array field of obj as objects, calling fn with each
// one's path and object. A missing or null field is empty.
func eachObject(obj lb.ConfigObject, field string, fn func(at string, o lb.ConfigObject) error) error {
	var elems []json.RawMessage
	if err := obj.Decode(&elems, field); err != nil {
		return err
	}
	for i, raw := range elems {
		at := field + "[" + strconv.Itoa(i) + "]"
		o, err := obj.ObjectAt(at, raw)
		if err != nil {
			return err
		}
		if err := fn(at, o); err != nil {
			return err
		}
	}
	return nil
}

func readVirtualHost(obj lb.ConfigObject) (VirtualHost, error) {
	var vh VirtualHost
	if err := decodeAll(obj, field{&vh.Name, "name"}, field{&vh.Domains, "domains"}); err != nil {
		return vh, err
	}
	err := eachObject(obj, "routes", func(at string, o lb.ConfigObject) error {
		r, err := readRoute(o)
		vh.Routes = append(vh.Routes, r)
		return lb.PrefixConfigError(at, err)
	})
	return vh, err
}

// field is one field to decode: where to, and its names.
type field struct {
	dst   any
	names string
}

// decodeAll decodes each field in order, stopping at the first error.
func decodeAll(obj lb.ConfigObject, fields ...field) error {
	for _, f := range fields {
		if err := obj.Decode(f.dst, f.names); err != nil {
			return err
		}
	}
	return nil
}

func readRoute(obj lb.ConfigObject) (Route, error) {
	var r Route
	if err := obj.Decode(&r.Name, "name"); err != nil {
		return r, err
	}
	raw, _, _ := obj.Raw("match")
	m, err := obj.ObjectAt("match", raw)
	if err != nil {
		return r, err
	}
	if r.Match, err = readMatch(m); err != nil {
		return r, lb.PrefixConfigError("match", err)
	}
	raw, _, ok := obj.Raw("route")
	if !ok {
		return r, nil // no action lbkit knows: Compile names it
	}
	a, err := obj.ObjectAt("route", raw)
	if err != nil {
		return r, err
	}
	r.Action, err = readAction(a)
	return r, lb.PrefixConfigError("route", err)
}

// sub reads the object in field of obj with fn, prefixing its errors with
// the field's name. A missing or null field is skipped: fn is not called.
func sub(obj lb.ConfigObject, field string, fn func(o lb.ConfigObject) error) error {
	raw, _, ok := obj.Raw(field)
	if !ok || isNull(raw) {
		return nil
	}
	o, err := obj.ObjectAt(field, raw)
	if err != nil {
		return err
	}
	return lb.PrefixConfigError(field, fn(o))
}

// readRegex reads a RegexMatcher in field of obj, nil if absent.
func readRegex(obj lb.ConfigObject, field string) (*RegexMatcher, error) {
	var re *RegexMatcher
	err := sub(obj, field, func(o lb.ConfigObject) error {
		re = &RegexMatcher{}
		return o.Decode(&re.Regex, "regex")
	})
	return re, err
}

func readMatch(obj lb.ConfigObject) (Match, error) {
	var m Match
	if _, _, ok := obj.Raw("regex"); ok {
		return m, lb.ConfigErrorf("regex", "the unsafe regex is not supported (gRFC A28): use safeRegex")
	}
	err := decodeAll(obj, field{&m.Prefix, "prefix"}, field{&m.Path, "path"}, field{&m.CaseSensitive, "caseSensitive"})
	if err != nil {
		return m, err
	}
	err = eachObject(obj, "queryParameters", func(at string, o lb.ConfigObject) error {
		var q QueryParameterMatcher
		err := o.Decode(&q.Name, "name")
		m.QueryParameters = append(m.QueryParameters, q)
		return lb.PrefixConfigError(at, err)
	})
	if err != nil {
		return m, err
	}
	if m.SafeRegex, err = readRegex(obj, "safeRegex"); err != nil {
		return m, err
	}
	err = sub(obj, "runtimeFraction", func(o lb.ConfigObject) error {
		m.RuntimeFraction = &RuntimeFraction{}
		if err := o.Decode(&m.RuntimeFraction.RuntimeKey, "runtimeKey"); err != nil {
			return err
		}
		return sub(o, "defaultValue", func(d lb.ConfigObject) error {
			f, err := readFraction(d)
			m.RuntimeFraction.DefaultValue = f
			return err
		})
	})
	if err != nil {
		return m, err
	}
	err = eachObject(obj, "headers", func(at string, o lb.ConfigObject) error {
		h, err := readHeader(o)
		m.Headers = append(m.Headers, h)
		return lb.PrefixConfigError(at, err)
	})
	return m, err
}

func readHeader(o lb.ConfigObject) (HeaderMatcher, error) {
	var h HeaderMatcher
	if _, _, ok := o.Raw("regexMatch"); ok {
		return h, lb.ConfigErrorf("regexMatch", "the unsafe regexMatch is not supported (gRFC A28): use safeRegexMatch")
	}
	err := decodeAll(o, field{&h.Name, "name"}, field{&h.ExactMatch, "exactMatch"},
		field{&h.PresentMatch, "presentMatch"}, field{&h.PrefixMatch, "prefixMatch"},
		field{&h.SuffixMatch, "suffixMatch"}, field{&h.ContainsMatch, "containsMatch"},
		field{&h.InvertMatch, "invertMatch"})
	if err != nil {
		return h, err
	}
	if h.SafeRegexMatch, err = readRegex(o, "safeRegexMatch"); err != nil {
		return h, err
	}
	if h.RangeMatch, err = readRange(o); err != nil {
		return h, err
	}
	err = sub(o, "stringMatch", func(so lb.ConfigObject) error {
		sm := &StringMatcher{}
		h.StringMatch = sm
		err := decodeAll(so, field{&sm.Exact, "exact"}, field{&sm.Prefix, "prefix"}, field{&sm.Suffix, "suffix"},
			field{&sm.Contains, "contains"}, field{&sm.IgnoreCase, "ignoreCase"})
		if err == nil {
			sm.SafeRegex, err = readRegex(so, "safeRegex")
		}
		return err
	})
	return h, err
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// readRange reads rangeMatch, whose bounds are proto3 JSON int64s (numbers
// or strings holding one).
func readRange(obj lb.ConfigObject) (*Int64Range, error) {
	var r *Int64Range
	err := sub(obj, "rangeMatch", func(o lb.ConfigObject) error {
		r = &Int64Range{}
		for _, b := range []struct {
			dst  *int64
			name string
		}{{&r.Start, "start"}, {&r.End, "end"}} {
			var n json.Number
			if err := o.Decode(&n, b.name); err != nil {
				return err
			}
			if n == "" {
				continue
			}
			v, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return lb.ConfigErrorf(b.name, "want a 64-bit integer, got %s", n)
			}
			*b.dst = v
		}
		return nil
	})
	return r, err
}

func readFraction(obj lb.ConfigObject) (Fraction, error) {
	var f Fraction
	raw, _, _ := obj.Raw("numerator")
	n, err := lb.ParseUint32(raw, 0)
	if err != nil {
		return f, lb.PrefixConfigError("numerator", err)
	}
	f.Numerator = n
	return f, obj.Decode(&f.Denominator, "denominator")
}

// readDuration reads a proto3 duration in field of obj (0 if absent).
func readDuration(obj lb.ConfigObject, field string) (time.Duration, error) {
	raw, _, _ := obj.Raw(field)
	d, err := lb.ParseDuration(raw)
	return d, lb.PrefixConfigError(field, err)
}

func readAction(obj lb.ConfigObject) (*Action, error) {
	a := &Action{}
	if err := obj.Decode(&a.Cluster, "cluster"); err != nil {
		return nil, err
	}
	var err error
	if a.Timeout, err = readDuration(obj, "timeout"); err != nil {
		return nil, err
	}
	err = sub(obj, "maxStreamDuration", func(o lb.ConfigObject) error {
		a.MaxStreamDuration, err = readDuration(o, "maxStreamDuration")
		return err
	})
	if err != nil {
		return nil, err
	}
	if a.HashPolicies, err = readHashPolicies(obj); err != nil {
		return nil, err
	}
	for _, name := range []string{"clusterHeader", "clusterSpecifierPlugin", "inlineClusterSpecifierPlugin"} {
		if _, _, ok := obj.Raw(name); ok {
			a.Unsupported = name
		}
	}
	err = sub(obj, "weightedClusters", func(wo lb.ConfigObject) error {
		a.WeightedClusters = &WeightedClusters{}
		if raw, _, ok := wo.Raw("totalWeight"); ok && !isNull(raw) {
			tw, err := lb.ParseUint32(raw, 0)
			if err != nil {
				return lb.PrefixConfigError("totalWeight", err)
			}
			a.WeightedClusters.TotalWeight = &tw
		}
		return eachObject(wo, "clusters", func(at string, o lb.ConfigObject) error {
			var c ClusterWeight
			err := o.Decode(&c.Name, "name")
			if err == nil {
				raw, _, _ := o.Raw("weight")
				c.Weight, err = lb.ParseUint32(raw, 0)
				err = lb.PrefixConfigError("weight", err)
			}
			a.WeightedClusters.Clusters = append(a.WeightedClusters.Clusters, c)
			return lb.PrefixConfigError(at, err)
		})
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// readHashPolicies reads an action's "hashPolicy" list.
func readHashPolicies(obj lb.ConfigObject) ([]HashPolicy, error) {
	var ps []HashPolicy
	err := eachObject(obj, "hashPolicy", func(at string, o lb.ConfigObject) error {
		var p HashPolicy
		err := readHashPolicy(o, &p)
		ps = append(ps, p)
		return lb.PrefixConfigError(at, err)
	})
	return ps, err
}

func readHashPolicy(o lb.ConfigObject, p *HashPolicy) error {
	if err := o.Decode(&p.Terminal, "terminal"); err != nil {
		return err
	}
	err := sub(o, "header", func(ho lb.ConfigObject) error {
		p.Header = &HeaderHash{}
		if err := ho.Decode(&p.Header.HeaderName, "headerName"); err != nil {
			return err
		}
		return sub(ho, "regexRewrite", func(ro lb.ConfigObject) error {
			rr := &RegexRewrite{}
			p.Header.RegexRewrite = rr
			if err := ro.Decode(&rr.Substitution, "substitution"); err != nil {
				return err
			}
			var err error
			rr.Pattern, err = readRegex(ro, "pattern")
			return err
		})
	})
	if err != nil {
		return err
	}
	err = sub(o, "filterState", func(fo lb.ConfigObject) error {
		p.FilterState = &FilterStateHash{}
		return fo.Decode(&p.FilterState.Key, "key")
	})
	if err != nil {
		return err
	}
	// Read and ignored (gRFC A42): their fields are listed as unknown.
	for _, ig := range []struct {
		dst  **IgnoredHash
		name string
	}{{&p.Cookie, "cookie"}, {&p.ConnectionProperties, "connectionProperties"}, {&p.QueryParameter, "queryParameter"}} {
		err := sub(o, ig.name, func(lb.ConfigObject) error {
			*ig.dst = &IgnoredHash{}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
