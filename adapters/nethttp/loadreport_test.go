package nethttp_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/lb"
)

// The TEXT and JSON forms Envoy documents parse into the same report, with
// ':' or '=' between name and value, proto or JSON field names, and bare or
// quoted numbers.
func TestParseLoadReportForms(t *testing.T) {
	want := lb.LoadReport{CPUUtilization: 0.7, ApplicationUtilization: 0.8, MemUtilization: 0.9, QPS: 1000, EPS: 2}
	for _, v := range []string{
		"TEXT cpu_utilization:0.7,application_utilization:0.8,mem_utilization:0.9,rps_fractional:1000,eps:2,named_metrics.foo:123,utilization.total:0.5",
		"TEXT cpu_utilization=0.7, application_utilization=0.8, mem_utilization=0.9, rps_fractional=1000, eps=2, named_metrics.foo=123, utilization.total=0.5,",
		`JSON {"cpu_utilization":0.7,"application_utilization":0.8,"mem_utilization":0.9,"rps_fractional":1000,"eps":2,"named_metrics":{"foo":123},"utilization":{"total":0.5}}`,
		`JSON {"cpuUtilization":"0.7","applicationUtilization":0.8,"memUtilization":0.9,"rpsFractional":"1000","eps":2,"namedMetrics":{"foo":"123"},"utilization":{"total":0.5},"future":true}`,
	} {
		var got lb.LoadReport
		if err := nethttp.ParseLoadReport(v, &got); err != nil {
			t.Fatalf("ParseLoadReport(%q) = %v", v, err)
		}
		named := got.Named
		got.Named = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseLoadReport(%q) = %+v, want %+v", v, got, want)
		}
		if f, ok := (&lb.LoadReport{Named: named}).Metric(lb.NamedMetricNamed, "foo"); !ok || f != 123 {
			t.Errorf("ParseLoadReport(%q): named_metrics.foo = %v, %v, want 123", v, f, ok)
		}
		if f, ok := (&lb.LoadReport{Named: named}).Metric(lb.NamedMetricUtilization, "total"); !ok || f != 0.5 {
			t.Errorf("ParseLoadReport(%q): utilization.total = %v, %v, want 0.5", v, f, ok)
		}
	}
	var got lb.LoadReport
	if err := nethttp.ParseLoadReport(`JSON {"rps":"40"}`, &got); err != nil || got.QPS != 40 {
		t.Errorf("JSON with the integer rps only: QPS %v, err %v, want 40, nil", got.QPS, err)
	}
}

// Malformed reports are errors wrapping ErrLoadReport that say what is
// wrong; none panics.
func TestParseLoadReportRefusesMalformedReports(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"", `unknown form ""`},
		{"XML <a/>", `unknown form "XML", want TEXT, JSON or BIN`},
		{"BIN CgQ=", "BIN form needs a decoder"},
		{"TEXT cpu_utilization:abc", `cpu_utilization: "abc" is not a number`},
		{`TEXT cpu_utilization:"0.7"`, "is not a number"},
		{"TEXT cpu_utilization:NaN", "not finite"},
		{"TEXT eps:Inf", "not finite"},
		{"TEXT cpu_utilization:-0.5", "negative or not finite"},
		{"TEXT utilization.x:-1", "negative or not finite"},
		{"TEXT cpu_utilization:0.1,cpu_utilization:0.2", "appears twice"},
		{"TEXT named_metrics.a:1,named_metrics.a:2", "appears twice"},
		{"TEXT named_metrics.:1", "empty metric name"},
		{"TEXT bogus:1", `unknown metric "bogus"`},
		{"TEXT cpu_utilization", "has no ':' or '='"},
		{"TEXT cpu_utilization:", "empty value"},
		{`JSON {"cpu_utilization":"NaN"}`, "not finite"},
		{`JSON {"eps":-1}`, "negative or not finite"},
		{`JSON {"named_metrics":[1]}`, "want an object of numbers"},
		{`JSON {"cpu_utilization":true}`, "is not a number"},
		{`JSON {`, "JSON:"},
		{"TEXT cpu_utilization:0.5," + strings.Repeat(" ", 1<<20), "longer than"},
	} {
		var r lb.LoadReport
		err := nethttp.ParseLoadReport(tc.value, &r)
		if !errors.Is(err, nethttp.ErrLoadReport) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLoadReport(%.40q) = %v, want an ErrLoadReport containing %q", tc.value, err, tc.want)
		}
	}
}

// FuzzParseLoadReport: no input panics, and an accepted report is valid
// (finite, no negative utilization or rate).
func FuzzParseLoadReport(f *testing.F) {
	for _, s := range []string{
		"TEXT cpu_utilization:0.7,rps_fractional:10,named_metrics.foo:1",
		`JSON {"cpu_utilization":0.7,"named_metrics":{"a":1}}`,
		"TEXT eps=1e308", "JSON {}", "BIN ", "TEXT ,,,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var r lb.LoadReport
		if err := nethttp.ParseLoadReport(v, &r); err != nil {
			return
		}
		if !r.Valid() || math.IsNaN(r.QPS) {
			t.Fatalf("ParseLoadReport(%q) accepted an invalid report %+v", v, r)
		}
	})
}

// The BIN form's base64, padded or not, reaches the decoder given to
// ParseLoadReportWith as bytes, into a reset report; its error and bad
// base64 are malformed reports.
func TestParseLoadReportWithBinDecoder(t *testing.T) {
	var gotPayload []byte
	bin := func(payload []byte, dst *lb.LoadReport) error {
		gotPayload = append(gotPayload[:0], payload...)
		if string(payload) == "bad" {
			return errors.New("refused")
		}
		dst.CPUUtilization = 0.5
		return nil
	}
	for _, v := range []string{"BIN b2s=", "BIN b2s", " BIN b2s="[1:] + " "} {
		r := lb.LoadReport{QPS: 7}
		if err := nethttp.ParseLoadReportWith(v, &r, bin); err != nil || string(gotPayload) != "ok" || r.CPUUtilization != 0.5 || r.QPS != 0 {
			t.Errorf("ParseLoadReportWith(%q): %v, payload %q, report %+v; want the bytes \"ok\" into a reset report", v, err, gotPayload, r)
		}
	}
	for _, tc := range []struct{ value, want string }{
		{"BIN YmFk", "BIN: refused"},
		{"BIN b2s*", "BIN: base64"},
	} {
		var r lb.LoadReport
		err := nethttp.ParseLoadReportWith(tc.value, &r, bin)
		if !errors.Is(err, nethttp.ErrLoadReport) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLoadReportWith(%q) = %v, want an ErrLoadReport containing %q", tc.value, err, tc.want)
		}
	}
}
