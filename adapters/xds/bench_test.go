package xds_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/adapters/xds"
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

func (standInConn) Lost() <-chan struct{} { return nil }
func (standInConn) Close() error          { return nil }

// bigAssignment returns an assignment of n endpoints in localities of 1000
// over two priorities; set (0 or 1) chooses one of two disjoint address
// sets.
func bigAssignment(name string, n, set int) *endpointv3.ClusterLoadAssignment {
	const perLocality = 1000
	var ls []locality
	for l := range (n + perLocality - 1) / perLocality {
		loc := locality{Zone: "z" + strconv.Itoa(l), Priority: uint32(l % 2), Weight: 1}
		for e := range min(perLocality, n-l*perLocality) {
			i := l*perLocality + e
			loc.Addrs = append(loc.Addrs, fmt.Sprintf("10.%d.%d.%d:80", set*64+i>>16, i>>8&255, i&255))
		}
		ls = append(ls, loc)
	}
	return assignment(name, ls...)
}

// BenchmarkEDSUpdate10k times a 10,000-endpoint EDS update from the
// management server's snapshot to the channel's first pick of a new
// endpoint: the ADS response over loopback, its decoding and validation,
// the tree, 10,000 new SubConns (stand-in dials) and the new picker. The
// server runs in the same process, so its allocations (encoding the
// response) are counted too.
func BenchmarkEDSUpdate10k(b *testing.B) {
	const n = 10_000
	cp := startControlPlane(b)
	cluster := []*clusterv3.Cluster{clusterNamed("bench")}
	sets := []*endpointv3.ClusterLoadAssignment{bigAssignment("bench", n, 0), bigAssignment("bench", n, 1)}
	cp.set("0", cluster, sets[:1])
	ch, err := conn.New("xds:///bench", conn.WithResolver(testBuilder(b, cp.addr)), conn.WithDialer(standIn{}))
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	ctx := context.Background()
	if _, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true}); err != nil {
		b.Fatal(err)
	}
	version := 0
	b.ReportAllocs()
	for b.Loop() {
		version++
		set := version % 2
		prefix := "10." + strconv.Itoa(set*64) + "."
		cp.set(strconv.Itoa(version), cluster, sets[set:set+1])
		for {
			p, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
			if err != nil {
				b.Fatal(err)
			}
			addr := p.SubConn.Address().Addr
			if p.Done != nil {
				p.Done(lb.DoneInfo{})
			}
			if len(addr) > len(prefix) && addr[:len(prefix)] == prefix {
				break
			}
		}
	}
}

// BenchmarkDecodeEndpoints10k is the client's decoding of one
// 10,000-endpoint assignment: impl=xds is what the client does (the
// protobuf message, written as proto3 JSON and parsed and validated by the
// eds package, the one implementation of the assignment's rules);
// impl=proto-unmarshal is protobuf decoding alone, the floor any client
// pays; impl=eds-file is the eds file resolver's parse of the same
// assignment as JSON.
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
		for b.Loop() {
			if _, _, err := xds.DecodeEndpoints(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=proto-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m endpointv3.ClusterLoadAssignment
			if err := proto.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=eds-file", func(b *testing.B) {
		b.ReportAllocs()
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
