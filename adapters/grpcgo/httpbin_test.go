package grpcgo_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/wrr"
)

// binReport is the BIN form of the endpoint-load-metrics header for r:
// "BIN " and the base64 of its serialized OrcaLoadReport.
func binReport(tb testing.TB, r *v3orcapb.OrcaLoadReport) string {
	b, err := proto.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	return "BIN " + base64.StdEncoding.EncodeToString(b)
}

// onSerializers is lbkit's weighted_round_robin under another name, whose
// balancers' serializers ser collects, so that a test can run their timers
// on ser's mock clock.
type onSerializers struct {
	wrr.Builder
	name string
	ser  *serializers
}

func (b onSerializers) Name() string { return b.name }

func (b onSerializers) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return b.Builder.ParseConfig(raw)
}

func (b onSerializers) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b.ser.add(lb.SerializerOf(opts.Scheduler))
	return b.Builder.Build(cc, opts)
}

// Real HTTP backends that send their ORCA reports in the BIN form of
// endpoint-load-metrics weigh weighted_round_robin by gRFC A58 through
// nethttp's Transport once it is given this module's decoder: the backend
// at a quarter of the other's utilization gets four times its requests.
// Without the decoder the same reports are malformed: ignored and counted.
func TestBinLoadReportsOverHTTPShiftTraffic(t *testing.T) {
	var addrs []string
	for _, b := range []struct {
		name string
		util float64
	}{{"light", 0.2}, {"heavy", 0.8}} {
		header := binReport(t, &v3orcapb.OrcaLoadReport{CpuUtilization: b.util, RpsFractional: 100})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(nethttp.LoadReportHeader, header)
			io.WriteString(w, b.name)
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	for _, decoder := range []bool{true, false} {
		sers := &serializers{clock: clock.NewMock()}
		metrics := lbtest.NewMetrics()
		pol := onSerializers{name: "wrr_on_mock_clock", ser: sers}
		ch, err := conn.New("static:///"+strings.Join(addrs, ","), conn.WithClock(sers.clock),
			conn.WithRegistry(lb.NewRegistry(pol)), conn.WithMetricsRecorder(metrics),
			conn.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"wrr_on_mock_clock": {"blackoutPeriod": "0s"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
		if decoder {
			tr.DecodeBinLoadReport = grpcgo.ParseLoadReport
		}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second} // a hang guard only
		answers := func(n int) map[string]int {
			by := map[string]int{}
			for range n {
				resp, err := client.Get("http://svc/")
				if err != nil {
					t.Fatal(err)
				}
				name, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				by[string(name)]++
			}
			return by
		}
		// The picker changes as the backends become READY; once both have
		// answered, the shares are even.
		for len(answers(2)) < 2 {
		}
		answers(100)
		sers.advance(t, wrr.DefaultWeightUpdatePeriod)
		got := answers(500)
		want := map[string]float64{"light": 400, "heavy": 100} // weights 500 and 125
		if !decoder {
			want = map[string]float64{"light": 250, "heavy": 250}
		}
		for name, w := range want {
			if math.Abs(float64(got[name])-w) > 3 {
				t.Errorf("decoder %v: after the weight update %v, want %v (± 3)", decoder, got, want)
			}
		}
		malformed := metrics.Value(conn.MetricMalformedLoadReports.Name, ch.Target())
		if decoder && malformed != 0 || !decoder && malformed < 600 {
			t.Errorf("decoder %v: %s = %d", decoder, conn.MetricMalformedLoadReports.Name, malformed)
		}
		tr.CloseIdleConnections()
		ch.Close()
	}
}

// The BIN form decodes through this module's decoder into the report its
// TEXT twin gives; base64 without padding is accepted; bad base64, bytes
// protobuf refuses and a negative utilization are malformed.
func TestParseBinLoadReportHeader(t *testing.T) {
	header := binReport(t, &v3orcapb.OrcaLoadReport{CpuUtilization: 0.7, RpsFractional: 1000, Eps: 2,
		NamedMetrics: map[string]float64{"foo": 123}})
	var text lb.LoadReport
	if err := nethttp.ParseLoadReport("TEXT cpu_utilization:0.7, rps_fractional:1000, eps:2, named_metrics.foo:123", &text); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{header, strings.TrimRight(header, "=")} {
		var got lb.LoadReport
		if err := nethttp.ParseLoadReportWith(v, &got, grpcgo.ParseLoadReport); err != nil {
			t.Fatalf("ParseLoadReportWith(%q) = %v", v, err)
		}
		if got.CPUUtilization != text.CPUUtilization || got.QPS != text.QPS || got.EPS != text.EPS ||
			len(got.Named) != 1 || got.Named[0] != text.Named[0] {
			t.Errorf("ParseLoadReportWith(%q) = %+v, want the TEXT form's %+v", v, got, text)
		}
	}
	for _, tc := range []struct{ value, want string }{
		{"BIN !!!!", "base64"},
		{"BIN " + base64.StdEncoding.EncodeToString([]byte{0xff, 0xff}), "malformed ORCA load report"},
		{binReport(t, &v3orcapb.OrcaLoadReport{CpuUtilization: -1}), "negative or not finite"},
	} {
		var r lb.LoadReport
		err := nethttp.ParseLoadReportWith(tc.value, &r, grpcgo.ParseLoadReport)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLoadReportWith(%q) = %v, want an error containing %q", tc.value, err, tc.want)
		}
	}
}

// FuzzParseBinLoadReportHeader: no header value panics nethttp's parser
// with this module's BIN decoder, and an accepted report is valid.
func FuzzParseBinLoadReportHeader(f *testing.F) {
	f.Add(binReport(f, &v3orcapb.OrcaLoadReport{CpuUtilization: 0.5, RpsFractional: 10, Utilization: map[string]float64{"a": 1}}))
	f.Add("BIN " + base64.RawStdEncoding.EncodeToString([]byte{0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})) // cpu NaN
	f.Add("BIN ")
	f.Add("BIN ====")
	f.Fuzz(func(t *testing.T, v string) {
		var r lb.LoadReport
		if err := nethttp.ParseLoadReportWith(v, &r, grpcgo.ParseLoadReport); err != nil {
			return
		}
		if !r.Valid() || math.IsNaN(r.QPS) {
			t.Fatalf("ParseLoadReportWith(%q) accepted an invalid report %+v", v, r)
		}
	})
}
