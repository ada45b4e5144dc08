package grpcgo

import (
	"io"
	"log/slog"
	"math"
	"testing"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/lb"
)

// The trailer's endpoint-load-metrics-bin is read when grpc-go did not
// parse the report itself (a program that does not link its orca
// package); a report grpc-go parsed (ServerLoad) wins; a malformed one is
// left out and counted; no report, no Load.
func TestDoneCarriesLoadReport(t *testing.T) {
	bin, err := proto.Marshal(&v3orcapb.OrcaLoadReport{CpuUtilization: 0.5, RpsFractional: 10, Eps: 1,
		NamedMetrics: map[string]float64{"b": 2, "a": 1}, Utilization: map[string]float64{"u": 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := proto.Marshal(&v3orcapb.OrcaLoadReport{CpuUtilization: -1})
	counter := &onceCounter{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), what: "malformed load reports"}
	for _, tc := range []struct {
		name          string
		di            balancer.DoneInfo
		wantCPU       float64
		wantLoad      bool
		wantMalformed uint64
	}{
		{name: "none", di: balancer.DoneInfo{Trailer: metadata.Pairs("x", "y")}},
		{name: "trailer", di: balancer.DoneInfo{Trailer: metadata.Pairs(LoadReportTrailer, string(bin))}, wantCPU: 0.5, wantLoad: true},
		//lint:ignore SA1019 a backend may still send the integer rate alone
		{name: "server load", di: balancer.DoneInfo{ServerLoad: &v3orcapb.OrcaLoadReport{CpuUtilization: 0.75, Rps: 3},
			Trailer: metadata.Pairs(LoadReportTrailer, string(bin))}, wantCPU: 0.75, wantLoad: true},
		{name: "not protobuf", di: balancer.DoneInfo{Trailer: metadata.Pairs(LoadReportTrailer, "\xff\xff")}, wantMalformed: 1},
		{name: "negative", di: balancer.DoneInfo{Trailer: metadata.Pairs(LoadReportTrailer, string(bad))}, wantMalformed: 2},
		{name: "foreign ServerLoad", di: balancer.DoneInfo{ServerLoad: "load"}, wantMalformed: 3},
	} {
		var got *lb.LoadReport
		var named []lb.NamedMetric
		doneWithLoad(func(di lb.DoneInfo) {
			got = di.Load
			if got != nil {
				named = got.Clone().Named
			}
		}, tc.di, counter)
		if (got != nil) != tc.wantLoad || (got != nil && got.CPUUtilization != tc.wantCPU) {
			t.Errorf("%s: Load = %+v, want present %v with cpu %v", tc.name, got, tc.wantLoad, tc.wantCPU)
		}
		if n := counter.n.Load(); n != tc.wantMalformed {
			t.Errorf("%s: %d malformed, want %d", tc.name, n, tc.wantMalformed)
		}
		if tc.name == "trailer" {
			want := []lb.NamedMetric{{Name: "a", Value: 1}, {Name: "b", Value: 2}, {Kind: lb.NamedMetricUtilization, Name: "u", Value: 0.25}}
			if len(named) != len(want) || named[0] != want[0] || named[1] != want[1] || named[2] != want[2] {
				t.Errorf("trailer: named metrics %+v, want %+v", named, want)
			}
		}
		if tc.name == "server load" && got != nil && got.QPS != 3 {
			t.Errorf("server load: QPS %v, want the integer rps 3", got.QPS)
		}
	}
}

// FuzzParseLoadReport: no input panics, and an accepted report is valid.
func FuzzParseLoadReport(f *testing.F) {
	seed, _ := proto.Marshal(&v3orcapb.OrcaLoadReport{CpuUtilization: 0.5, RpsFractional: 10, NamedMetrics: map[string]float64{"a": 1}})
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}) // cpu_utilization NaN
	f.Fuzz(func(t *testing.T, b []byte) {
		var r lb.LoadReport
		if err := ParseLoadReport(b, &r); err != nil {
			return
		}
		if !r.Valid() || math.IsNaN(r.QPS) {
			t.Fatalf("ParseLoadReport(%x) accepted an invalid report %+v", b, r)
		}
	})
}
