package grpcgo

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/lb"
)

// LoadReportTrailer is the trailer key of gRPC's per-call ORCA load report
// (gRFC A51): a binary xds.data.orca.v3.OrcaLoadReport.
const LoadReportTrailer = "endpoint-load-metrics-bin"

// errLoadReport is wrapped by ParseLoadReport's errors.
var errLoadReport = errors.New("grpcgo: malformed ORCA load report")

// ParseLoadReport decodes b, the binary form of an
// xds.data.orca.v3.OrcaLoadReport (the value of the
// endpoint-load-metrics-bin trailer, or of Envoy's "BIN " header after
// base64 decoding), into dst, which it resets first. An encoding protobuf
// refuses, or a report with a NaN, infinite or negative utilization or
// rate, is an error, and dst is then unspecified. It never panics.
func ParseLoadReport(b []byte, dst *lb.LoadReport) error {
	var r v3orcapb.OrcaLoadReport
	if err := proto.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%w: %w", errLoadReport, err)
	}
	return fromProto(&r, dst)
}

// fromProto converts r into dst and validates it.
func fromProto(r *v3orcapb.OrcaLoadReport, dst *lb.LoadReport) error {
	named := dst.Named[:0]
	*dst = lb.LoadReport{
		CPUUtilization:         r.GetCpuUtilization(),
		MemUtilization:         r.GetMemUtilization(),
		ApplicationUtilization: r.GetApplicationUtilization(),
		QPS:                    r.GetRpsFractional(),
		EPS:                    r.GetEps(),
		Named:                  named,
	}
	if dst.QPS == 0 {
		//lint:ignore SA1019 the older integer rate, used when rps_fractional is absent
		dst.QPS = float64(r.GetRps())
	}
	for _, m := range []struct {
		kind lb.NamedMetricKind
		m    map[string]float64
	}{
		{lb.NamedMetricNamed, r.GetNamedMetrics()},
		{lb.NamedMetricUtilization, r.GetUtilization()},
		{lb.NamedMetricRequestCost, r.GetRequestCost()},
	} {
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			dst.Named = append(dst.Named, lb.NamedMetric{Kind: m.kind, Name: k, Value: m.m[k]})
		}
	}
	if !dst.Valid() {
		return fmt.Errorf("%w: a value is negative or not finite", errLoadReport)
	}
	return nil
}

// reports holds the reports passed to Done: each is valid only during the
// call, then reused.
var reports = sync.Pool{New: func() any { return new(lb.LoadReport) }}

// doneWithLoad calls done with the lbkit form of di, carrying the RPC's
// load report when there is a valid one: the report grpc-go parsed itself
// (di.ServerLoad, set when the program links google.golang.org/grpc/orca),
// else the trailer's endpoint-load-metrics-bin. A malformed report is left
// out and counted in *malformed.
func doneWithLoad(done func(lb.DoneInfo), di balancer.DoneInfo, malformed *onceCounter) {
	info := toDoneInfo(di)
	r := reports.Get().(*lb.LoadReport)
	defer func() {
		clear(r.Named)
		r.Named = r.Named[:0]
		reports.Put(r)
	}()
	var err error
	switch {
	case di.ServerLoad != nil:
		if pb, ok := di.ServerLoad.(*v3orcapb.OrcaLoadReport); ok {
			err = fromProto(pb, r)
		} else {
			err = fmt.Errorf("%w: ServerLoad of type %T", errLoadReport, di.ServerLoad)
		}
	case len(metadata.MD(di.Trailer).Get(LoadReportTrailer)) > 0:
		err = ParseLoadReport([]byte(metadata.MD(di.Trailer).Get(LoadReportTrailer)[0]), r)
	default:
		done(info)
		return
	}
	if err != nil {
		malformed.add(err)
	} else {
		info.Load = r
	}
	done(info)
}

// onceCounter counts one kind of event of a channel's picks (malformed
// load reports, pick timeouts grpc-go cannot apply) and logs the first at
// WARN, naming what it ignores: a backend or a policy that causes one
// causes many. It is safe for concurrent use.
type onceCounter struct {
	n      atomic.Uint64
	logged atomic.Bool
	logger *slog.Logger
	what   string // what the bridge ignores: "malformed load reports"
}

// add counts err's event.
func (c *onceCounter) add(err error) {
	c.n.Add(1)
	if !c.logged.Load() && c.logged.CompareAndSwap(false, true) {
		c.logger.Warn("grpcgo: ignoring "+c.what+" (logged once per channel)", "error", err)
	}
}
