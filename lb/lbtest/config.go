package lbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/lbkit/lbkit/lb"
)

// CheckConfigParse is the body of a fuzz target for a policy's config
// parser. It parses raw with b as lbkit does ([lb.ParseConfig]) and fails tb
// unless the parser keeps lbkit's contract for configs:
//
//   - a rejected input gives a [*lb.ConfigError], a nil config and no
//     unknown fields, and the error names a path whenever raw is a
//     syntactically valid JSON object in valid UTF-8 (invalid UTF-8 makes
//     the whole document invalid), so the fault is inside it;
//   - an accepted input parses again to an equal config and the same
//     unknown fields ([reflect.DeepEqual]): parsing is deterministic.
//
// A panic in the parser fails the fuzz target by itself. CheckConfigParse
// returns the config, its unknown fields and true when raw was accepted, so
// the caller can check its own invariants of an accepted config.
//
//	f.Fuzz(func(t *testing.T, raw []byte) {
//		lbtest.CheckConfigParse(t, mypolicy.Builder{}, raw)
//	})
func CheckConfigParse(tb TB, b lb.Builder, raw []byte) (lb.Config, []string, bool) {
	tb.Helper()
	cfg, unknown, err := lb.ParseConfig(b, raw)
	if err != nil {
		var ce *lb.ConfigError
		if !errors.As(err, &ce) {
			tb.Fatalf("parse(%q): error %v is a %T, want a *lb.ConfigError", raw, err, err)
		}
		if cfg != nil || unknown != nil {
			tb.Fatalf("parse(%q) returned %#v and unknown fields %q with error %v, want neither", raw, cfg, unknown, err)
		}
		trimmed := bytes.TrimSpace(raw)
		if ce.Path == "" && len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) && utf8.Valid(trimmed) {
			tb.Fatalf("parse(%q): error %q on a JSON object names no path", raw, err)
		}
		return nil, nil, false
	}
	again, againUnknown, err := lb.ParseConfig(b, raw)
	if err != nil || !reflect.DeepEqual(again, cfg) || !reflect.DeepEqual(againUnknown, unknown) {
		tb.Fatalf("parse(%q) gave %#v (unknown %q), then %#v (unknown %q), %v", raw, cfg, unknown, again, againUnknown, err)
	}
	return cfg, unknown, true
}

// WantConfigError reports, with tb.Errorf, unless err is a [*lb.ConfigError]
// whose Path is wantPath ("" for an error about the input as a whole, such
// as invalid JSON). what names the call in the message. It returns whether
// the check passed, so a table test can go on to its next case.
func WantConfigError(tb TB, what string, err error, wantPath string) bool {
	tb.Helper()
	var ce *lb.ConfigError
	if !errors.As(err, &ce) {
		tb.Errorf("%s: error %v (%T), want a *lb.ConfigError", what, err, err)
		return false
	}
	if ce.Path != wantPath {
		tb.Errorf("%s: error path %q, want %q (error: %v)", what, ce.Path, wantPath, err)
		return false
	}
	return true
}

// ParseCase is one case of a config parser's table test: the input, and
// either the config it must give or the error: an error is wanted when
// ErrPath is set (the [*lb.ConfigError]'s path) or Err is (for an error
// about the input as a whole, whose path is "").
type ParseCase[C comparable] struct {
	In      string
	Want    C
	ErrPath string
	Err     bool
}

// CheckParseCases runs b's ParseConfig on each case's input and reports,
// with tb.Errorf, a config other than the one wanted or an error other than
// a [*lb.ConfigError] at the path wanted ([WantConfigError]).
func CheckParseCases[C comparable](tb TB, b lb.ConfigParser, cases []ParseCase[C]) {
	tb.Helper()
	for _, tc := range cases {
		cfg, _, err := b.ParseConfig([]byte(tc.In))
		if tc.ErrPath == "" && !tc.Err {
			if err != nil || cfg != lb.Config(tc.Want) {
				tb.Errorf("ParseConfig(%s) = %#v, %v; want %#v, nil", tc.In, cfg, err, tc.Want)
			}
			continue
		}
		WantConfigError(tb, fmt.Sprintf("ParseConfig(%s) = %#v", tc.In, cfg), err, tc.ErrPath)
	}
}
