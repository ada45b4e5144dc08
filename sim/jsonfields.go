package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// object is one JSON object of a scenario at its path, read with lb's
// config toolkit (case-sensitive names, a key given twice is an error).
// Every error it returns is an [*lb.ConfigError] naming the field.
type object struct {
	o    lb.ConfigObject
	path string
}

// parseObject decodes raw, the value at path, as a JSON object.
func parseObject(raw json.RawMessage, path string) (object, error) {
	if isNull(raw) {
		return object{}, lb.ConfigErrorf(path, "want an object, got %s", kindOf(raw))
	}
	o, err := lb.ParseConfigObject(raw)
	if err != nil {
		return object{}, lb.PrefixConfigError(path, err)
	}
	return object{o: o, path: path}, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// kindOf names raw's JSON type for messages.
func kindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return "nothing"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "an array"
	case t[0] == '"':
		return "a string"
	case t[0] == 'n':
		return "null"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	}
	return "a number"
}

// at returns the path of field name.
func (o object) at(name string) string { return lb.JoinPath(o.path, name) }

// has reports whether field name is present and not null.
func (o object) has(name string) bool {
	raw, _, ok := o.o.Raw(name)
	return ok && !isNull(raw)
}

// raw returns field name's value, or nil when absent.
func (o object) raw(name string) json.RawMessage {
	raw, _, _ := o.o.Raw(name)
	return raw
}

// decode decodes field name into dst when present.
func (o object) decode(name string, dst any) error {
	return lb.PrefixConfigError(o.path, o.o.Decode(dst, name))
}

// str reads a string field.
func (o object) str(name string, dst *string) error { return o.decode(name, dst) }

// float reads a number field that must lie in [lo, hi].
func (o object) float(name string, dst *float64, lo, hi float64) error {
	if err := o.decode(name, dst); err != nil {
		return err
	}
	if *dst < lo || *dst > hi || math.IsNaN(*dst) {
		return lb.ConfigErrorf(o.at(name), "must be from %v to %v, got %v", lo, hi, *dst)
	}
	return nil
}

// integer reads a whole-number field that must lie in [lo, hi].
func (o object) integer(name string, dst *int64, lo, hi int64) error {
	if !o.has(name) {
		return nil
	}
	var f float64
	if err := o.decode(name, &f); err != nil {
		return err
	}
	if f != math.Trunc(f) {
		return lb.ConfigErrorf(o.at(name), "want a whole number, got %v", f)
	}
	if f < float64(lo) || f > float64(hi) {
		return lb.ConfigErrorf(o.at(name), "must be from %d to %d, got %v", lo, hi, f)
	}
	*dst = int64(f)
	return nil
}

// duration reads a proto3 JSON duration field ("0.5s") that must lie in
// [lo, hi].
func (o object) duration(name string, dst *time.Duration, lo, hi time.Duration) error {
	if !o.has(name) {
		return nil
	}
	d, err := lb.ParseDuration(o.raw(name))
	if err != nil {
		return lb.PrefixConfigError(o.at(name), err)
	}
	if d < lo || d > hi {
		return lb.ConfigErrorf(o.at(name), "must be from %v to %v, got %v", lo, hi, d)
	}
	*dst = d
	return nil
}

// array reads an array field as its raw elements; absent or null is empty.
func (o object) array(name string) ([]json.RawMessage, error) {
	if !o.has(name) {
		return nil, nil
	}
	var elems []json.RawMessage
	if err := o.decode(name, &elems); err != nil {
		return nil, lb.ConfigErrorf(o.at(name), "want an array, got %s", kindOf(o.raw(name)))
	}
	return elems, nil
}

// each parses every element of array field name as an object whose fields
// are among known, in order, and calls fn with it. want, when not empty,
// is the error for an absent or empty array.
func (o object) each(name, want string, known []string, fn func(object) error) error {
	elems, err := o.array(name)
	if err != nil {
		return err
	}
	if len(elems) == 0 && want != "" {
		return lb.ConfigErrorf(o.at(name), "%s", want)
	}
	for i, e := range elems {
		el, err := parseObject(e, o.elem(name, i))
		if err == nil {
			err = el.known(known...)
		}
		if err == nil {
			err = fn(el)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// elem returns the path of element i of array field name.
func (o object) elem(name string, i int) string {
	return o.at(name) + "[" + strconv.Itoa(i) + "]"
}

// known fails on the first field not among names: a scenario has no field
// the simulator ignores. Parsers call it first, so a misspelled field is
// reported as such rather than as the missing field it was meant to be.
func (o object) known(names ...string) error {
	o.o.Raw(names...) // marks them read: what remains is unknown
	if u := o.o.Unknown(); len(u) > 0 {
		return lb.ConfigErrorf(o.at(u[0]), "unknown field")
	}
	return nil
}
