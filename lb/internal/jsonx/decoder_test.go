package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeAny decodes one document into the types encoding/json gives an
// any, with numbers as float64.
func decodeAny(data []byte) (any, error) {
	d := New(data)
	v, err := d.anyValue()
	if err != nil {
		return nil, err
	}
	return v, d.End()
}

func (d *Decoder) anyValue() (any, error) {
	switch k := d.Peek(); k {
	case Object:
		m := map[string]any{}
		err := d.Object(func(key []byte) error {
			k := string(key)
			v, err := d.anyValue()
			m[k] = v
			return err
		})
		return m, err
	case Array:
		s := []any{}
		err := d.Array(func(int) error {
			v, err := d.anyValue()
			s = append(s, v)
			return err
		})
		return s, err
	case String:
		return d.String()
	case Number:
		lit, err := d.Number()
		if err != nil {
			return nil, err
		}
		f, _ := strconv.ParseFloat(string(lit), 64)
		return f, nil
	case Bool:
		return d.Bool()
	case Null:
		d.Null()
		return nil, nil
	}
	return nil, d.invalid()
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e3, "x\n\u00e9\ud83d\ude00", true, false, null], "b": {"c": {}}} `,
		`"\ud800"`, `"\ud800\u0041"`, `0`, `-0.0E+1`, `"é"`, `[[[]]]`,
	} {
		got, err := decodeAny([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", in, got, want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "invalid JSON at byte 0: unexpected end of input"},
		{`{`, "invalid JSON at byte 1"},
		{`{"a":1,}`, "invalid JSON at byte 7: want a string for an object key"},
		{`[1,]`, "invalid JSON at byte 3"},
		{`[1 2]`, "want ',' or ']'"},
		{`01`, "invalid JSON at byte 1: invalid character '1' after top-level value"},
		{`1.`, "after the decimal point"},
		{`1e`, "in the exponent"},
		{`-`, "want a digit"},
		{`"a`, "unexpected end of input in a string"},
		{"\"\x01\"", "control character"},
		{"\"\xff\"", "invalid UTF-8"},
		{`"\x"`, "invalid escape"},
		{`"\u12"`, `invalid \u escape`},
		{`tru`, "invalid character 't'"},
		{`nul`, "invalid character 'n'"},
		{`{"a":1} x`, "after top-level value"},
		{`{"a":1,"a":2}`, "a: field given twice"},
		{`{"x":{"\u0061":1,"a":2}}`, "x.a: field given twice"},
		{`{"a b":[{"":1,"":1}]}`, `["a b"][0][""]: field given twice`},
		{strings.Repeat("[", MaxDepth+1), "exceeded max depth"},
	} {
		_, err := decodeAny([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestManyKeysRepeat(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	b.WriteString(`"k7":2}`)
	_, err := decodeAny([]byte(b.String()))
	if err == nil || err.Error() != "k7: field given twice" {
		t.Fatalf("got %v, want k7: field given twice", err)
	}
}

func TestParseIntegral(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  error
	}{
		{"0", 0, nil}, {"-0", 0, nil}, {"1e2", 100, nil}, {"3.0", 3, nil}, {"2.5", 0, ErrNotIntegral},
		{"-1", 0, ErrNegative}, {"4294967296", 0, ErrTooLarge}, {"1e400", 0, ErrTooLarge},
		{"1e-3", 0, ErrNotIntegral}, {"4294967295", 4294967295, nil}, {"0e99999999999999999999", 0, nil},
	} {
		got, err := ParseIntegral(tc.in, 1<<32-1)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("ParseIntegral(%q) = %d, %v; want %d, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for s, want := range map[string]bool{"1": true, " 1": false, "1 ": false, "": false, "-": false, "1.5e3": true, "01": false, `"1"`: false} {
		if IsNumber(s) != want {
			t.Errorf("IsNumber(%q) = %v", s, !want)
		}
	}
}

// FuzzDecode checks the decoder against encoding/json: it accepts what
// encoding/json accepts in valid UTF-8 unless a key repeats, rejects what
// encoding/json rejects, and decodes to the same value; every error is an
// *Error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}],"d":true}`, `[1e3,-0.5,"\u00e9\ud83d"]`, `{"a":1,"a":2}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeAny(data)
		var want any
		valid := json.Valid(data)
		wantErr := json.Unmarshal(data, &want) // fails on numbers beyond float64 too
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not an *Error", err, err)
			}
			if valid && utf8.Valid(data) && !strings.HasSuffix(err.Error(), "field given twice") {
				t.Fatalf("rejected what encoding/json accepts: %v", err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted what encoding/json rejects: %v", wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v, encoding/json gives %#v", got, want)
		}
		raw, err := New(data).Raw()
		if err != nil || !bytes.Equal(raw, bytes.TrimSpace(data)) {
			t.Fatalf("Raw = %q, %v; want %q", raw, err, bytes.TrimSpace(data))
		}
	})
}

// A callback that only peeks (skipping the space before the value) still
// has its value skipped.
func TestUnreadValueAfterSpaceIsSkipped(t *testing.T) {
	d := New([]byte(`{"a":  [1, {"b": 2}], "c" : 3, "e": [ 4 ]}`))
	var keys []string
	err := d.Object(func(key []byte) error {
		keys = append(keys, string(key))
		if string(key) == "e" {
			return d.Array(func(int) error { d.Peek(); return nil })
		}
		d.Peek()
		return nil
	})
	if err != nil || strings.Join(keys, ",") != "a,c,e" || d.End() != nil {
		t.Fatalf("keys %q, error %v", keys, err)
	}
}
