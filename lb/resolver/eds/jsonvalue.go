package eds

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// This file decodes proto3 JSON values field by field, so that every error
// can name its path. The raw values it sees come from a document that
// json.Valid accepted, so they are syntactically valid JSON.

// object is one decoded JSON object: its fields by the key as written.
type object struct {
	path   string
	fields map[string]json.RawMessage
}

// decodeObject decodes raw, a JSON object, rejecting a key given twice as
// protobuf's JSON parsers do.
func decodeObject(path string, raw json.RawMessage) (object, error) {
	if kind := jsonKind(raw); kind != "object" {
		return object{}, errorf(path, "want an object, got %s", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return object{}, errorf(path, "%w", err)
	}
	o := object{path: path, fields: make(map[string]json.RawMessage)}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return object{}, errorf(path, "%w", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return object{}, errorf(keyPath(path, key), "%w", err)
		}
		if _, dup := o.fields[key]; dup {
			return object{}, errorf(keyPath(path, key), "field given twice")
		}
		o.fields[key] = v
	}
	return o, nil
}

// keyPath appends an object key to a path: as a field name when it looks
// like one, else quoted in brackets (["a.b"], [""]), so that the path stays
// unambiguous and never empty.
func keyPath(path, key string) string {
	simple := key != ""
	for i := 0; i < len(key) && simple; i++ {
		c := key[i]
		simple = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9'
	}
	if simple {
		return join(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// camelCase returns the lowerCamelCase JSON name of a proto field name.
func camelCase(field string) string {
	var b strings.Builder
	upper := false
	for i := 0; i < len(field); i++ {
		c := field[i]
		switch {
		case c == '_':
			upper = true
		case upper && 'a' <= c && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			upper = false
		default:
			b.WriteByte(c)
			upper = false
		}
	}
	return b.String()
}

// get returns the value of the proto field named field (snake_case), given
// under that name or its lowerCamelCase JSON name, and its path. A JSON
// null counts as absent, as in proto3 JSON. Giving both names is an error.
func (o object) get(field string) (json.RawMessage, string, bool, error) {
	path := join(o.path, field)
	raw, ok := o.fields[field]
	if camel := camelCase(field); camel != field {
		if raw2, ok2 := o.fields[camel]; ok2 {
			if ok {
				return nil, path, false, errorf(path, "given twice, as %q and as %q", field, camel)
			}
			raw, ok = raw2, true
		}
	}
	if !ok || isNull(raw) {
		return nil, path, false, nil
	}
	return raw, path, true, nil
}

// fieldKind says which values of an unsupported field are still accepted
// because proto3 JSON gives them the same meaning as an absent field.
type fieldKind int

const (
	// kindMessage: any non-null value sets the field (or a oneof member).
	kindMessage fieldKind = iota
	// kindList: a repeated or map field; empty [] or {} is absent.
	kindList
	// kindScalar: a scalar without presence; its default ("", 0, false)
	// is absent.
	kindScalar
)

// reject returns an error if the unsupported field is set, saying why it
// is not supported.
func (o object) reject(field string, kind fieldKind, why string) error {
	raw, path, ok, err := o.get(field)
	if err != nil || !ok || isDefault(raw, kind) {
		return err
	}
	return errorf(path, "not supported: %s", why)
}

// isDefault reports whether raw means the same as an absent field of the
// given kind.
func isDefault(raw json.RawMessage, kind fieldKind) bool {
	switch kind {
	case kindList:
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return false
		}
		switch v := v.(type) {
		case []any:
			return len(v) == 0
		case map[string]any:
			return len(v) == 0
		}
	case kindScalar:
		switch jsonKind(raw) {
		case "string":
			return string(bytes.TrimSpace(raw)) == `""`
		case "boolean":
			return string(bytes.TrimSpace(raw)) == "false"
		case "number":
			v, err := parseIntegral(string(bytes.TrimSpace(raw)), math.MaxUint64)
			return err == nil && v == 0
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the type of a JSON value for error messages.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	default:
		return "number"
	}
}

// decodeString decodes a JSON string.
func decodeString(path string, raw json.RawMessage) (string, error) {
	if k := jsonKind(raw); k != "string" {
		return "", errorf(path, "want a string, got %s", k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errorf(path, "%w", err)
	}
	return s, nil
}

// decodeArray decodes a JSON array into its raw elements.
func decodeArray(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	if k := jsonKind(raw); k != "array" {
		return nil, errorf(path, "want an array, got %s", k)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, errorf(path, "%w", err)
	}
	return elems, nil
}

// decodeUint32 decodes a proto3 JSON uint32 (also the value of a
// google.protobuf.UInt32Value): a JSON number, or a JSON string holding
// one, whose value is an integer from 0 to 4294967295. See
// parseIntegral for the number forms.
func decodeUint32(path string, raw json.RawMessage) (uint32, error) {
	lit := string(bytes.TrimSpace(raw))
	switch k := jsonKind(raw); k {
	case "number":
	case "string":
		s, err := decodeString(path, raw)
		if err != nil {
			return 0, err
		}
		if s == "" || !json.Valid([]byte(s)) || jsonKind(json.RawMessage(s)) != "number" || strings.TrimSpace(s) != s {
			return 0, errorf(path, "string %q does not hold a number", s)
		}
		lit = s
	default:
		return 0, errorf(path, "want a number or a string holding a number, got %s", k)
	}
	v, err := parseIntegral(lit, math.MaxUint32)
	if err != nil {
		return 0, errorf(path, "%s: %v", lit, err)
	}
	return uint32(v), nil
}

var (
	errNotIntegral = errors.New("not an integer")
	errNegative    = errors.New("negative")
	errTooLarge    = errors.New("too large")
)

// parseIntegral parses lit, a valid JSON number, exactly: it accepts a
// fraction or an exponent only when the value is still an integer, as
// proto3 JSON does ("1e2" is 100, "3.0" is 3, "2.5" is an error). The value
// must be from 0 to max; "-0" is 0.
func parseIntegral(lit string, max uint64) (uint64, error) {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, nil // zero, whatever the exponent and sign
	}
	// value = digits × 10^(e - len(frac) + trailing zeros stripped)
	shift := -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	if hasExp {
		e, err := strconv.Atoi(exp)
		if err != nil {
			// Only an exponent too large for an int gets here.
			if strings.HasPrefix(exp, "-") {
				return 0, errNotIntegral
			}
			return 0, errTooLarge
		}
		shift += e
	}
	switch {
	case shift < 0:
		return 0, errNotIntegral
	case neg:
		return 0, errNegative
	case len(digits)+shift > 20:
		return 0, errTooLarge
	}
	v, err := strconv.ParseUint(digits+strings.Repeat("0", shift), 10, 64)
	if err != nil || v > max {
		return 0, errTooLarge
	}
	return v, nil
}

// decodeEnum decodes a proto3 JSON enum: the value's name as a string
// (case-sensitive), or its number as a JSON number.
func decodeEnum(path string, raw json.RawMessage, names []string) (int, error) {
	switch k := jsonKind(raw); k {
	case "string":
		s, err := decodeString(path, raw)
		if err != nil {
			return 0, err
		}
		for i, n := range names {
			if n == s {
				return i, nil
			}
		}
		return 0, errorf(path, "unknown value %q (want one of %s)", s, strings.Join(names, ", "))
	case "number":
		lit := string(bytes.TrimSpace(raw))
		v, err := parseIntegral(lit, math.MaxInt32)
		if err != nil {
			return 0, errorf(path, "%s: %v", lit, err)
		}
		if v >= uint64(len(names)) {
			return 0, errorf(path, "unknown value %d (want 0 to %d)", v, len(names)-1)
		}
		return int(v), nil
	default:
		return 0, errorf(path, "want an enum name string or number, got %s", k)
	}
}
