package xds_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/adapters/xds/internal/cputime"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// standIn is a conn.Dialer that reaches every address at once without a
// socket, so that the benchmark measures the update, not 10k dials.
type standIn struct{}

func (standIn) Dial(context.Context, resolver.Address) (conn.Conn, error) { return standInConn{}, nil }

type standInConn struct{}

// lbDoneInfo is the outcome the benchmarks and stress test report.
func lbDoneInfo() lb.DoneInfo { return lb.DoneInfo{} }

func (standInConn) Lost() <-chan struct{} { return nil }
func (standInConn) Close() error          { return nil }

// bigAssignment is the benchmarks' 10,000-endpoint assignment in two
// disjoint address sets.
var bigAssignment = controlplane.BigAssignment

// BenchmarkEDSUpdate10k times a 10,000-endpoint EDS update from its
// source to the channel's first pick of a new endpoint: the resolver's
// part (reading and decoding the assignment, building the tree) and the
// channel's (10,000 new SubConns on stand-in dials, the new picker).
// impl=xds takes it from a snapshot set on a real go-control-plane server
// in the same process (over ADS on loopback; the server's own work of
// encoding the response is counted, its allocations too); impl=eds-file,
// the baseline, from the same assignment written as JSON to the file of an
// eds:/// channel, read on its next poll.
func BenchmarkEDSUpdate10k(b *testing.B) {
	const n = 10_000
	sets := []*endpointv3.ClusterLoadAssignment{bigAssignment("bench", n, 0), bigAssignment("bench", n, 1)}
	b.Run("impl=xds", func(b *testing.B) {
		cp := startControlPlane(b)
		cluster := []*clusterv3.Cluster{clusterNamed("bench")}
		cp.set("0", cluster, sets[:1])
		ch, err := conn.New("xds-cluster:///bench", conn.WithResolver(testBuilder(b, cp.addr)), conn.WithDialer(standIn{}))
		if err != nil {
			b.Fatal(err)
		}
		defer ch.Close()
		version := 0
		measureUpdates(b, ch, func() int {
			version++
			cp.set(strconv.Itoa(version), cluster, sets[version%2:version%2+1])
			return version % 2
		})
	})
	b.Run("impl=eds-file", func(b *testing.B) {
		var files [2][]byte
		for i, cla := range sets {
			js, err := protojson.Marshal(cla)
			if err != nil {
				b.Fatal(err)
			}
			files[i] = js
		}
		path := filepath.Join(b.TempDir(), "cla.json")
		if err := os.WriteFile(path, files[0], 0o600); err != nil {
			b.Fatal(err)
		}
		clk := clock.NewMock()
		res, err := eds.NewBuilder()
		if err != nil {
			b.Fatal(err)
		}
		ch, err := conn.New("eds://"+path, conn.WithResolver(res), conn.WithDialer(standIn{}), conn.WithClock(clk))
		if err != nil {
			b.Fatal(err)
		}
		defer ch.Close()
		version := 0
		measureUpdates(b, ch, func() int {
			version++
			if err := os.WriteFile(path, files[version%2], 0o600); err != nil {
				b.Fatal(err)
			}
			clk.Add(eds.DefaultPollInterval)
			return version % 2
		})
	})
}

// measureUpdates waits for ch's first pick, then, per iteration, calls
// update, which publishes address set 0 or 1 and returns which, and picks
// until a pick returns an address of that set. Between picks it sleeps
// 50 µs, so that the picking goroutine leaves the cores to the update.
// Besides the wall time it reports the process's CPU time per update
// (cpu-ns/op), which a loaded machine does not stretch.
func measureUpdates(b *testing.B, ch *conn.Channel, update func() int) {
	ctx := context.Background()
	if _, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer cputime.Start().Report(b)
	for b.Loop() {
		prefix := "10." + strconv.Itoa(update()*64) + "."
		for {
			p, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
			if err != nil {
				b.Fatal(err)
			}
			if p.Done != nil {
				p.Done(lb.DoneInfo{})
			}
			if strings.HasPrefix(p.SubConn.Address().Addr, prefix) {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// BenchmarkDecodeEndpoints10k is the client's decoding of one
// 10,000-endpoint assignment: impl=xds is what the client does (for
// this common form, reading the wire straight into the eds package's
// model; else protobuf decoding and the direct conversion; then its
// validation); impl=json-detour is what it did before issue 29 (the
// message written as proto3 JSON and read by eds.Parse);
// impl=proto-unmarshal is protobuf decoding alone, the floor any client
// pays; impl=eds-file is the eds file resolver's parse of the same
// assignment as JSON. Each reports the process's CPU time per decode too
// (cpu-ns/op).
func BenchmarkDecodeEndpoints10k(b *testing.B) {
	cla := bigAssignment("bench", 10_000, 0)
	raw, err := proto.Marshal(cla)
	if err != nil {
		b.Fatal(err)
	}
	js, err := protojson.Marshal(cla)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=xds", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Start().Report(b)
		for b.Loop() {
			if _, _, err := xds.DecodeEndpoints(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=json-detour", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Start().Report(b)
		for b.Loop() {
			var m endpointv3.ClusterLoadAssignment
			if err := proto.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
			data, err := protojson.Marshal(&m)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eds.Parse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=proto-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Start().Report(b)
		for b.Loop() {
			var m endpointv3.ClusterLoadAssignment
			if err := proto.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=eds-file", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Start().Report(b)
		for b.Loop() {
			c, err := eds.Parse(js)
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
