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

// parser is a builder whose ParseConfig is a function.
type parser func(json.RawMessage) (lb.Config, []string, error)

func (parser) Name() string                                     { return "parser" }
func (parser) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }
func (p parser) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return p(raw)
}

// check runs CheckConfigParse with parse on raw and returns the failure
// message, or "" if the check passed.
func check(parse parser, raw string) (msg string) {
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
		parse parser
		raw   string
		want  string // a part of the failure message; "" for none
	}{
		{"accepted", func(json.RawMessage) (lb.Config, []string, error) { return &one, []string{"x"}, nil }, `{"x": 1}`, ""},
		{"rejected with a path", func(json.RawMessage) (lb.Config, []string, error) {
			return nil, nil, &lb.ConfigError{Path: "x", Err: errors.New("bad")}
		}, `{"x": 1}`, ""},
		{"rejected non-object without a path", func(json.RawMessage) (lb.Config, []string, error) {
			return nil, nil, &lb.ConfigError{Err: errors.New("want an object")}
		}, `[`, ""},
		{"plain error", func(json.RawMessage) (lb.Config, []string, error) { return nil, nil, errors.New("bad") }, `{}`, "want a *lb.ConfigError"},
		// lb.ParseConfig drops what a parser returns beside its error.
		{"config with error", func(json.RawMessage) (lb.Config, []string, error) {
			return &one, []string{"x"}, &lb.ConfigError{Path: "x", Err: errors.New("bad")}
		}, `{"x": 1}`, ""},
		{"object error without path", func(json.RawMessage) (lb.Config, []string, error) {
			return nil, nil, &lb.ConfigError{Err: errors.New("bad")}
		}, ` {"x": 1} `, "names no path"},
		{"not deterministic", func(json.RawMessage) (lb.Config, []string, error) {
			calls++
			v := calls
			return &v, nil, nil
		}, `{}`, "then"},
		{"unknown fields not deterministic", func(json.RawMessage) (lb.Config, []string, error) {
			calls++
			return &one, []string{fmt.Sprint(calls)}, nil
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
