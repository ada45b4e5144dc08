package xds_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/weight"
)

// A RING_HASH cluster from a real go-control-plane server reaches the tree
// as gRFC A42 and A76 say: ring_hash_experimental over each priority's
// endpoints, each endpoint weighted by locality × endpoint weight, and an
// endpoint's envoy.lb hash_key metadata as its hash key.
func TestRingHashClusterReachesTheTree(t *testing.T) {
	cp := startControlPlane(t)
	c := clusterNamed("c1")
	c.LbPolicy = clusterv3.Cluster_RING_HASH
	cla := assignment("c1",
		locality{Zone: "a", Weight: 3, Addrs: []string{"10.0.0.1:80", "10.0.0.2:80"}},
		locality{Zone: "b", Weight: 2, Addrs: []string{"10.0.0.3:80"}})
	meta, err := structpb.NewStruct(map[string]any{"hash_key": "pod-1"})
	if err != nil {
		t.Fatal(err)
	}
	second := cla.Endpoints[0].LbEndpoints[1]
	second.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": meta}}
	cp.set("1", []*clusterv3.Cluster{c}, []*endpointv3.ClusterLoadAssignment{cla})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})

	st := cc.NextState(t)
	if sc := string(st.ServiceConfig); !strings.Contains(sc, `"ring_hash_experimental":{"minRingSize":1024,"maxRingSize":8388608}`) || strings.Contains(sc, "weighted_target") {
		t.Errorf("service config %s: want ring_hash_experimental over each priority, no locality layer", sc)
	}
	var got []string
	for _, a := range st.Addresses {
		w, _ := weight.Get(a)
		got = append(got, fmt.Sprintf("%s %s %d", a.Addr, hashkey.Get(a), w))
	}
	want := []string{"10.0.0.1:80  3", "10.0.0.2:80 pod-1 3", "10.0.0.3:80  2"}
	if !slices.Equal(got, want) {
		t.Errorf("addresses %q, want %q", got, want)
	}
}
