package lbtest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// failureTB records the first Fatalf and stops the check there, as
// testing.T's FailNow would.
type failureTB struct{ msg string }

type stopped struct{}

func (*failureTB) Helper()               {}
func (*failureTB) Errorf(string, ...any) {}
func (*failureTB) Cleanup(func())        {}
func (f *failureTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// check runs CheckConfigParse with parse on raw and returns the failure
// message, or "" if the check passed.
func check(parse func(json.RawMessage) (*int, error), raw string) (msg string) {
	tb := &failureTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
			msg = tb.msg
		}
	}()
	lbtest.CheckConfigParse(tb, parse, []byte(raw))
	return ""
}

func TestCheckConfigParse(t *testing.T) {
	one := 1
	calls := 0
	tests := []struct {
		name  string
		parse func(json.RawMessage) (*int, error)
		raw   string
		want  string // a part of the failure message; "" for none
	}{
		{"accepted", func(json.RawMessage) (*int, error) { return &one, nil }, `{}`, ""},
		{"rejected with a path", func(json.RawMessage) (*int, error) {
			return nil, &lb.ConfigError{Path: "x", Err: errors.New("bad")}
		}, `{"x": 1}`, ""},
		{"rejected non-object without a path", func(json.RawMessage) (*int, error) {
			return nil, &lb.ConfigError{Err: errors.New("want an object")}
		}, `[`, ""},
		{"plain error", func(json.RawMessage) (*int, error) { return nil, errors.New("bad") }, `{}`, "want a *lb.ConfigError"},
		{"config with error", func(json.RawMessage) (*int, error) {
			return &one, &lb.ConfigError{Path: "x", Err: errors.New("bad")}
		}, `{"x": 1}`, "want the zero config"},
		{"object error without path", func(json.RawMessage) (*int, error) {
			return nil, &lb.ConfigError{Err: errors.New("bad")}
		}, ` {"x": 1} `, "names no path"},
		{"not deterministic", func(json.RawMessage) (*int, error) {
			calls++
			v := calls
			return &v, nil
		}, `{}`, "then"},
	}
	for _, tc := range tests {
		got := check(tc.parse, tc.raw)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: check failed: %s", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: failure %q, want one containing %q", tc.name, got, tc.want)
		}
	}
}

// errorsTB records Errorf calls.
type errorsTB struct {
	failureTB
	errs []string
}

func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func TestWantConfigError(t *testing.T) {
	pathErr := &lb.ConfigError{Path: "a.b", Err: errors.New("bad")}
	for _, tc := range []struct {
		err  error
		path string
		ok   bool
	}{
		{pathErr, "a.b", true},
		{fmt.Errorf("wrapped: %w", pathErr), "a.b", true},
		{pathErr, "a", false},
		{&lb.ConfigError{Err: errors.New("bad json")}, "", true},
		{errors.New("plain"), "", false},
		{nil, "", false},
	} {
		tb := &errorsTB{}
		if got := lbtest.WantConfigError(tb, "call", tc.err, tc.path); got != tc.ok || (len(tb.errs) == 0) != tc.ok {
			t.Errorf("WantConfigError(%v, %q) = %v with reports %q, want %v", tc.err, tc.path, got, tb.errs, tc.ok)
		}
	}
}
