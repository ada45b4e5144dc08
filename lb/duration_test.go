package lb_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string // a substring of the error; "" for success
	}{
		{in: ``, want: 0},
		{in: `null`, want: 0},
		{in: `"10s"`, want: 10 * time.Second},
		{in: `"0s"`, want: 0},
		{in: `"0.5s"`, want: 500 * time.Millisecond},
		{in: `"1.000000001s"`, want: time.Second + 1},
		{in: `"-1.5s"`, want: -1500 * time.Millisecond},
		{in: `"9223372036.854775807s"`, want: time.Duration(1<<63 - 1)},
		{in: `"9223372036.854775808s"`, err: "overflows a Go time.Duration"},
		{in: `"315576000000s"`, err: "overflows a Go time.Duration"},
		{in: `"315576000001s"`, err: "outside the range of google.protobuf.Duration"},
		{in: `"99999999999999999999s"`, err: `want a duration`},
		{in: `"1.0000000001s"`, err: `want a duration`},
		{in: `"10"`, err: `want a duration`},
		{in: `"10ms"`, err: `want a duration`},
		{in: `"+1s"`, err: `want a duration`},
		{in: `"1e3s"`, err: `want a duration`},
		{in: `".5s"`, err: `want a duration`},
		{in: `"1.s"`, err: `want a duration`},
		{in: `" 1s"`, err: `want a duration`},
		{in: `10`, err: "got a number"},
		{in: `{"seconds":1}`, err: "got an object"},
	} {
		got, err := lb.ParseDuration(json.RawMessage(tc.in))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseDuration(%s) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseDuration(%s) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}
