package slowstart_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// parse parses raw as a policy config object holding a slowStartConfig.
func parse(raw string) (*slowstart.Config, []string, error) {
	var unknown []string
	obj, err := lb.ParseConfigObject(json.RawMessage(raw))
	if err != nil {
		return nil, nil, err
	}
	c, err := slowstart.ParseField(obj)
	if err == nil {
		unknown = obj.Unknown()
	}
	return c, unknown, err
}

// TestFactor pins the ramp of Envoy's slow start documentation and gRFC
// A100: max(minWeightPercent/100, (max(t, 1s)/window)^(1/aggression)),
// and 1 from the window's end on.
func TestFactor(t *testing.T) {
	c := slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 1, MinWeightPercent: 10}
	for _, tc := range []struct {
		cfg     slowstart.Config
		elapsed time.Duration
		want    float64
	}{
		{c, 0, 0.1},                      // max(0, 1s)/10s = 0.1
		{c, -time.Second, 0.1},           // a clock that went back counts as 0
		{c, 500 * time.Millisecond, 0.1}, // the first second counts as one
		{c, 5 * time.Second, 0.5},        // linear
		{c, 9999 * time.Millisecond, .9999},
		{c, 10 * time.Second, 1}, // the window's end
		{c, time.Hour, 1},
		{slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 2, MinWeightPercent: 10}, 4 * time.Second, math.Sqrt(0.4)},
		{slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 0.5, MinWeightPercent: 10}, 5 * time.Second, 0.25},
		{slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 0.5, MinWeightPercent: 50}, 5 * time.Second, 0.5}, // the floor
		{slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 1, MinWeightPercent: 0}, 0, 0.1},
		{slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 1, MinWeightPercent: 100}, 0, 1},
		{slowstart.Config{SlowStartWindow: 500 * time.Millisecond, Aggression: 1, MinWeightPercent: 10}, 0, 1}, // 1s/0.5s, capped
		{slowstart.Config{}, 0, 1}, // no window: no ramp
	} {
		if got := tc.cfg.Factor(tc.elapsed); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v.Factor(%v) = %v, want %v", tc.cfg, tc.elapsed, got, tc.want)
		}
	}
}

// TestParseField: A100's field names and their snake_case twins, the
// defaults (aggression 1, minWeightPercent 10), and every bad value an
// error naming its field.
func TestParseField(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *slowstart.Config
		errPath string
	}{
		{in: `{}`},
		{in: `{"slowStartConfig": null}`},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s"}}`, want: &slowstart.Config{SlowStartWindow: 30 * time.Second, Aggression: 1, MinWeightPercent: 10}},
		{in: `{"slow_start_config": {"slow_start_window": "0.5s", "aggression": "2.5", "min_weight_percent": 0}}`, want: &slowstart.Config{SlowStartWindow: 500 * time.Millisecond, Aggression: 2.5, MinWeightPercent: 0}},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": null, "minWeightPercent": 100}}`, want: &slowstart.Config{SlowStartWindow: 30 * time.Second, Aggression: 1, MinWeightPercent: 100}},
		{in: `{"slowStartConfig": 1}`, errPath: "slowStartConfig"},
		{in: `{"slowStartConfig": {}}`, errPath: "slowStartConfig.slowStartWindow"},
		{in: `{"slowStartConfig": {"slowStartWindow": "0s"}}`, errPath: "slowStartConfig.slowStartWindow"},
		{in: `{"slowStartConfig": {"slowStartWindow": "-1s"}}`, errPath: "slowStartConfig.slowStartWindow"},
		{in: `{"slowStartConfig": {"slowStartWindow": 30}}`, errPath: "slowStartConfig.slowStartWindow"},
		{in: `{"slow_start_config": {"slow_start_window": "x"}}`, errPath: "slow_start_config.slow_start_window"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": 0}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": -1}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": "NaN"}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": "Infinity"}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "aggression": true}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "minWeightPercent": 100.5}}`, errPath: "slowStartConfig.minWeightPercent"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "minWeightPercent": -0.1}}`, errPath: "slowStartConfig.minWeightPercent"},
		{in: `{"slowStartConfig": {"slowStartWindow": "30s", "min_weight_percent": "x"}}`, errPath: "slowStartConfig.min_weight_percent"},
	} {
		got, _, err := parse(tc.in)
		if tc.errPath != "" {
			lbtest.WantConfigError(t, fmt.Sprintf("parse(%s) = %+v", tc.in, got), err, tc.errPath)
			continue
		}
		if err != nil || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("parse(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestParseFieldListsUnknownFields: the slowStartConfig object's unknown
// fields are the policy config's, under the field's path.
func TestParseFieldListsUnknownFields(t *testing.T) {
	_, unknown, err := parse(`{"slowStartConfig": {"slowStartWindow": "1s", "jitter": 1}}`)
	if err != nil || len(unknown) != 1 || unknown[0] != "slowStartConfig.jitter" {
		t.Fatalf("unknown = %q, %v; want [slowStartConfig.jitter]", unknown, err)
	}
}

// TestValidate: a Config built in Go is checked with the parser's rules.
func TestValidate(t *testing.T) {
	ok := slowstart.Config{SlowStartWindow: time.Second, Aggression: 1, MinWeightPercent: 10}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", ok, err)
	}
	for _, tc := range []struct {
		edit func(*slowstart.Config)
		path string
	}{
		{func(c *slowstart.Config) { c.SlowStartWindow = 0 }, "slowStartWindow"},
		{func(c *slowstart.Config) { c.Aggression = 0 }, "aggression"},
		{func(c *slowstart.Config) { c.Aggression = math.NaN() }, "aggression"},
		{func(c *slowstart.Config) { c.Aggression = math.Inf(1) }, "aggression"},
		{func(c *slowstart.Config) { c.MinWeightPercent = 101 }, "minWeightPercent"},
		{func(c *slowstart.Config) { c.MinWeightPercent = math.NaN() }, "minWeightPercent"},
	} {
		c := ok
		tc.edit(&c)
		lbtest.WantConfigError(t, fmt.Sprintf("Validate(%+v)", c), c.Validate(), tc.path)
	}
}

// FuzzParseField: any input gives a *lb.ConfigError with a path or a
// valid config whose factors are in [0, 1], non-decreasing in time, and 1
// at the window's end.
func FuzzParseField(f *testing.F) {
	for _, s := range []string{`{}`, `{"slowStartConfig": {"slowStartWindow": "30s"}}`,
		`{"slowStartConfig": {"slowStartWindow": "30s", "aggression": 3, "minWeightPercent": 50}}`,
		`{"slow_start_config": {"slow_start_window": "0.001s", "aggression": "1e-300", "min_weight_percent": "0"}}`,
		`{"slowStartConfig": {"slowStartWindow": "-1s"}}`, `{"slowStartConfig": []}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, err := parse(string(raw))
		if err != nil {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("parse(%q): error %v is a %T", raw, err, err)
			}
			return
		}
		if c == nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parse(%q) = %+v, which does not validate: %v", raw, c, err)
		}
		prev := 0.0
		for i := range 12 {
			d := c.SlowStartWindow * time.Duration(i) / 10
			fct := c.Factor(d)
			if !(fct >= prev && fct <= 1) {
				t.Fatalf("%+v.Factor(%v) = %v after %v", c, d, fct, prev)
			}
			prev = fct
		}
		if prev != 1 {
			t.Fatalf("%+v.Factor past the window = %v, want 1", c, prev)
		}
		// MarshalJSON writes what ParseField reads back.
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", c, err)
		}
		again, _, err := parse(`{"slowStartConfig":` + string(out) + `}`)
		if err != nil || *again != *c {
			t.Fatalf("%+v marshalled to %s, parsed back as %+v, %v", c, out, again, err)
		}
	})
}

// TestMarshalJSON: a Config encodes as the object the parser reads.
func TestMarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		c    slowstart.Config
		want string
	}{
		{slowstart.Config{SlowStartWindow: 30 * time.Second, Aggression: 1, MinWeightPercent: 10}, `{"slowStartWindow":"30s","aggression":1,"minWeightPercent":10}`},
		{slowstart.Config{SlowStartWindow: 1500 * time.Millisecond, Aggression: 0.25, MinWeightPercent: 0}, `{"slowStartWindow":"1.5s","aggression":0.25,"minWeightPercent":0}`},
		{slowstart.Config{SlowStartWindow: time.Nanosecond, Aggression: 2, MinWeightPercent: 100}, `{"slowStartWindow":"0.000000001s","aggression":2,"minWeightPercent":100}`},
	} {
		out, err := json.Marshal(tc.c)
		if err != nil || string(out) != tc.want {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tc.c, out, err, tc.want)
		}
	}
	if _, err := json.Marshal(slowstart.Config{Aggression: math.NaN()}); err == nil {
		t.Error("json.Marshal of a NaN aggression succeeded")
	}
}

// TestMarshalNegativeWindow: an invalid negative window still encodes as
// the duration it is (the parser then refuses it).
func TestMarshalNegativeWindow(t *testing.T) {
	for d, want := range map[time.Duration]string{-1500 * time.Millisecond: `"-1.5s"`, math.MinInt64: `"-9223372036.854775808s"`} {
		out, err := json.Marshal(slowstart.Config{SlowStartWindow: d, Aggression: 1})
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("json.Marshal(window %v) = %s, %v; want the window %s", d, out, err, want)
		}
	}
}
