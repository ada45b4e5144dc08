package grpcgo_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// A typed config becomes the service config of lbkit's policy in grpc-go:
// the top entry under the adapter's name, the child under lbkit's; grpc-go
// accepts it, and refuses a bad one with lbkit's error and JSON path.
func TestServiceConfigFromATypedConfig(t *testing.T) {
	sc, err := grpcgo.ServiceConfig(outlierdetection.Policy{ChildPolicy: roundrobin.Config{}})
	want := `{"loadBalancingConfig":[{"lbkit_outlier_detection":{"childPolicy":[{"round_robin":{}}]}}]}`
	if err != nil || sc != want {
		t.Fatalf("ServiceConfig = %s, %v; want %s", sc, err, want)
	}
	cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithDefaultServiceConfig(sc),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient refused %s: %v", sc, err)
	}
	cc.Close()

	bad, err := grpcgo.ServiceConfig(outlierdetection.Policy{Detection: outlierdetection.Detection{MaxEjectionPercent: 101}, ChildPolicy: roundrobin.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithDefaultServiceConfig(bad),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err == nil || !strings.Contains(err.Error(), "maxEjectionPercent: must be <= 100, got 101") {
		t.Errorf("grpc.NewClient with %s: %v, want lbkit's error naming maxEjectionPercent", bad, err)
	}

	if _, err := grpcgo.ServiceConfig(nil); err == nil {
		t.Error("ServiceConfig(nil): no error")
	}
}
