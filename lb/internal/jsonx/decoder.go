// Package jsonx is lbkit's one JSON toolkit: a single-pass pull decoder
// over a byte slice that keeps the JSON path of the value it is on, so that
// every error can name its place. Service configs, policy configs (package
// lb) and EDS assignments (package eds) all decode through it, under one
// set of rules:
//
//   - the input is RFC 8259 JSON in valid UTF-8, one value, nothing after
//     it but white space;
//   - a key given twice in one object is an error (as protobuf's JSON
//     parsers do), compared after unescaping;
//   - nesting deeper than [MaxDepth] is an error;
//   - an escaped lone surrogate (\ud800) decodes to U+FFFD.
//
// A [Decoder] is not safe for concurrent use.
package jsonx

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects a [Decoder]
// accepts, as encoding/json's.
const MaxDepth = 10000

// Kind is the type of a JSON value.
type Kind uint8

// The kinds of JSON values. Invalid is what [Decoder.Peek] returns at the
// end of the input or before a byte that starts no value.
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

// String names the kind for error messages: "an object", "an array", "a
// string", "a number", "a boolean", "null" or "invalid JSON".
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "a boolean"
	case Number:
		return "a number"
	case String:
		return "a string"
	case Array:
		return "an array"
	case Object:
		return "an object"
	}
	return "invalid JSON"
}

// Error is a decoding error: a syntax error (Syntax true, Offset the byte
// where the input stops being JSON) or an error about a value at Path.
type Error struct {
	// Path is the JSON path of the value at fault, such as
	// "endpoints[0].locality.region"; empty for the root.
	Path string
	// Syntax is true when the input is not valid JSON.
	Syntax bool
	// Offset is the byte offset of a syntax error.
	Offset int
	// Err is the reason.
	Err error
}

// Error returns "path: reason", or "invalid JSON at byte N: reason".
func (e *Error) Error() string {
	if e.Syntax {
		return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Err.Error()
	}
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// segment is one step of the current path: an object key (a span of
// unescaped bytes in the key arena of its depth) or an array index.
type segment struct {
	key   []byte
	name  string // the key's canonical name, if the caller gave one
	index int
	isKey bool
}

// level holds the keys of the object open at one depth, to catch a key
// given twice; reused from one object to the next.
type level struct {
	arena []byte
	ends  []int
	set   map[string]struct{} // used once an object has many keys
}

// manyKeys is the number of keys past which an object's keys are checked
// for repeats through a map rather than by a linear scan.
const manyKeys = 32

// Decoder reads one JSON document value by value. Methods that read a
// value consume it; on a syntax error every later call returns that error.
type Decoder struct {
	data   []byte
	pos    int
	path   []segment
	levels []level
	err    error
	buf    []byte // scratch for unescaping string values
}

// New returns a Decoder over data, which it does not copy or change.
func New(data []byte) *Decoder { return &Decoder{data: data} }

// Path returns the JSON path of the current position: keys that are
// identifiers joined with '.', other keys as ["key"], indexes as [i].
func (d *Decoder) Path() string {
	var b []byte
	for _, s := range d.path {
		key := s.key
		if s.name != "" {
			key = []byte(s.name)
		}
		b = AppendSegment(b, key, s.index, s.isKey)
	}
	return string(b)
}

// SetKeyName makes the current object member appear in paths as name
// rather than as its key, for a field written under another spelling
// (a proto field's JSON name). It is for use inside an [Decoder.Object]
// callback.
func (d *Decoder) SetKeyName(name string) {
	if n := len(d.path); n > 0 && d.path[n-1].isKey {
		d.path[n-1].name = name
	}
}

// FieldErrorf returns an [*Error] at the field name of the current
// value, such as a required field found missing after [Decoder.Object].
func (d *Decoder) FieldErrorf(name, format string, args ...any) error {
	path := d.Path()
	if path != "" {
		path += "."
	}
	return &Error{Path: path + name, Err: fmt.Errorf(format, args...)}
}

// AppendSegment appends one path step to b: ".key" (or "key" at the
// start) for an identifier, `["key"]` for another key, "[i]" for an index.
func AppendSegment(b, key []byte, index int, isKey bool) []byte {
	if !isKey {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(index), 10)
		return append(b, ']')
	}
	if !isIdentifier(key) {
		b = append(b, '[')
		b = strconv.AppendQuote(b, string(key))
		return append(b, ']')
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	return append(b, key...)
}

func isIdentifier(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for i, c := range key {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// Errorf returns an [*Error] at the current path.
func (d *Decoder) Errorf(format string, args ...any) error {
	return &Error{Path: d.Path(), Err: fmt.Errorf(format, args...)}
}

// syntax records and returns a syntax error at the current offset.
func (d *Decoder) syntax(format string, args ...any) error {
	if d.err == nil {
		d.err = &Error{Syntax: true, Offset: d.pos, Err: fmt.Errorf(format, args...)}
	}
	return d.err
}

func (d *Decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// Peek returns the kind of the next value without consuming it.
func (d *Decoder) Peek() Kind {
	if d.err != nil {
		return Invalid
	}
	d.skipSpace()
	if d.pos >= len(d.data) {
		return Invalid
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return Object
	case c == '[':
		return Array
	case c == '"':
		return String
	case c == 't' || c == 'f':
		return Bool
	case c == 'n':
		return Null
	case c == '-' || '0' <= c && c <= '9':
		return Number
	}
	return Invalid
}

// End checks that nothing but white space follows the value read.
func (d *Decoder) End() error {
	if d.err != nil {
		return d.err
	}
	d.skipSpace()
	if d.pos < len(d.data) {
		return d.syntax("invalid character %q after top-level value", d.data[d.pos])
	}
	return nil
}

// Offset returns the offset of the next unread byte.
func (d *Decoder) Offset() int { return d.pos }

// Object reads an object, calling fn for each member with its unescaped
// key, which stays valid until fn returns. fn reads the member's value; if
// it returns nil without reading it, the value is skipped. An error from
// fn stops the read and is returned as is.
func (d *Decoder) Object(fn func(key []byte) error) error {
	if k := d.Peek(); k != Object {
		return d.wantErr("an object", k)
	}
	depth := len(d.path)
	if depth >= MaxDepth {
		return d.syntax("exceeded max depth %d", MaxDepth)
	}
	for depth >= len(d.levels) {
		d.levels = append(d.levels, level{})
	}
	lv := &d.levels[depth]
	lv.arena, lv.ends, lv.set = lv.arena[:0], lv.ends[:0], nil
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return d.syntax("want a string for an object key")
		}
		start := len(lv.arena)
		var err error
		if lv.arena, err = d.appendString(lv.arena); err != nil {
			return err
		}
		key := lv.arena[start:]
		if d.repeated(lv, start) {
			d.path = append(d.path, segment{key: key, isKey: true})
			err := d.Errorf("field given twice")
			d.path = d.path[:depth]
			return err
		}
		lv.ends = append(lv.ends, len(lv.arena))
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return d.syntax("want ':' after an object key")
		}
		d.pos++
		d.path = append(d.path, segment{key: key, isKey: true})
		done, err := d.element(depth, func() error { return fn(key) }, '}', "an object")
		if done || err != nil {
			return err
		}
	}
}

// element has fn read one object member's value or one array element (its
// path segment pushed), skips the value if fn did not read it, pops the
// segment and reads the separator after it: done is true after close.
func (d *Decoder) element(depth int, fn func() error, close byte, in string) (done bool, err error) {
	d.skipSpace()
	before := d.pos
	if err := fn(); err != nil {
		return false, err
	}
	if d.pos == before {
		if err := d.Skip(); err != nil {
			return false, err
		}
	}
	d.path = d.path[:depth]
	d.skipSpace()
	if d.pos >= len(d.data) {
		return false, d.syntax("unexpected end of input in %s", in)
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		return false, nil
	case close:
		d.pos++
		return true, nil
	}
	return false, d.syntax("want ',' or '%c' in %s", close, in)
}

// repeated reports whether the key that starts at start in lv's arena was
// given before in the same object.
func (d *Decoder) repeated(lv *level, start int) bool {
	key := lv.arena[start:]
	if lv.set != nil {
		if _, ok := lv.set[string(key)]; ok {
			return true
		}
		lv.set[string(key)] = struct{}{}
		return false
	}
	prev := 0
	for _, end := range lv.ends {
		if string(lv.arena[prev:end]) == string(key) {
			return true
		}
		prev = end
	}
	if len(lv.ends) == manyKeys {
		lv.set = make(map[string]struct{}, 2*manyKeys)
		prev = 0
		for _, end := range lv.ends {
			lv.set[string(lv.arena[prev:end])] = struct{}{}
			prev = end
		}
		lv.set[string(key)] = struct{}{}
	}
	return false
}

// Array reads an array, calling fn for each element with its index. fn
// reads the element; if it returns nil without reading it, the element is
// skipped. An error from fn stops the read and is returned as is.
func (d *Decoder) Array(fn func(i int) error) error {
	if k := d.Peek(); k != Array {
		return d.wantErr("an array", k)
	}
	depth := len(d.path)
	if depth >= MaxDepth {
		return d.syntax("exceeded max depth %d", MaxDepth)
	}
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return nil
	}
	for i := 0; ; i++ {
		d.path = append(d.path, segment{index: i})
		done, err := d.element(depth, func() error { return fn(i) }, ']', "an array")
		if done || err != nil {
			return err
		}
	}
}

// wantErr returns the error for a value of kind got where want was
// expected: the syntax error if the input is not JSON there, else an
// [*Error] at the current path.
func (d *Decoder) wantErr(want string, got Kind) error {
	if got == Invalid {
		return d.invalid()
	}
	return d.Errorf("want %s, got %s", want, got)
}

// invalid returns the syntax error at a position where no value starts.
func (d *Decoder) invalid() error {
	if d.err != nil {
		return d.err
	}
	if d.pos >= len(d.data) {
		return d.syntax("unexpected end of input")
	}
	return d.syntax("invalid character %q looking for a value", d.data[d.pos])
}

// String reads a string value.
func (d *Decoder) String() (string, error) {
	if k := d.Peek(); k != String {
		return "", d.wantErr("a string", k)
	}
	for i := d.pos + 1; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' { // plain ASCII: one copy
			s := string(d.data[d.pos+1 : i])
			d.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	b, err := d.appendString(d.buf[:0])
	if err != nil {
		return "", err
	}
	d.buf = b
	return string(b), nil
}

// Number reads a number and returns its text.
func (d *Decoder) Number() ([]byte, error) {
	if k := d.Peek(); k != Number {
		return nil, d.wantErr("a number", k)
	}
	start := d.pos
	if err := d.scanNumber(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// Bool reads true or false.
func (d *Decoder) Bool() (bool, error) {
	if k := d.Peek(); k != Bool {
		return false, d.wantErr("a boolean", k)
	}
	if d.literal("true") {
		return true, nil
	}
	if d.literal("false") {
		return false, nil
	}
	return false, d.invalid()
}

// Null consumes a null and reports true if the next value is null;
// otherwise it consumes nothing and reports false.
func (d *Decoder) Null() bool {
	return d.Peek() == Null && d.literal("null")
}

// literal consumes lit if the input continues with it.
func (d *Decoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

// Raw reads any value and returns its text.
func (d *Decoder) Raw() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	if err := d.Skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// Skip reads any value, checking its syntax and the rules of the package.
func (d *Decoder) Skip() error {
	switch k := d.Peek(); k {
	case Object:
		return d.Object(func([]byte) error { return d.Skip() })
	case Array:
		return d.Array(func(int) error { return d.Skip() })
	case String:
		return d.skipString()
	case Number:
		return d.scanNumber()
	case Bool:
		_, err := d.Bool()
		return err
	case Null:
		if d.literal("null") {
			return nil
		}
	}
	return d.invalid()
}

// skipString checks a string without decoding it.
func (d *Decoder) skipString() error {
	i := d.pos + 1
	for i < len(d.data) {
		c := d.data[i]
		if c == '"' {
			d.pos = i + 1
			return nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			var err error
			d.buf, err = d.appendString(d.buf[:0])
			return err
		}
		i++
	}
	d.pos = len(d.data)
	return d.syntax("unexpected end of input in a string")
}

// scanNumber consumes a number, checking its grammar.
func (d *Decoder) scanNumber() error {
	data, i := d.data, d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
	default:
		d.pos = i
		return d.syntax("want a digit in a number")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.pos = i
			return d.syntax("want a digit after the decimal point")
		}
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.pos = i
			return d.syntax("want a digit in the exponent")
		}
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
	}
	d.pos = i
	return nil
}

var errUnexpectedEnd = errors.New("unexpected end of input in a string")
