package xds

// TEMPORARY: replaced by the cds branch (bootstrap.go, cluster.go).

import (
	"encoding/json"
	"errors"
	"os"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const BootstrapFileEnv = "GRPC_XDS_BOOTSTRAP"

var ErrNoBootstrap = errors.New("xds: no bootstrap")

type Bootstrap struct {
	Servers []Server
	Node    Node
}
type Server struct {
	URI                    string
	IgnoreResourceDeletion bool
}
type Node struct{ ID, Cluster string }

func LoadBootstrap() (*Bootstrap, error) {
	p := os.Getenv(BootstrapFileEnv)
	if p == "" {
		return nil, ErrNoBootstrap
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return ParseBootstrap(data)
}

func ParseBootstrap(data []byte) (*Bootstrap, error) {
	var raw struct {
		XDSServers []struct {
			ServerURI string `json:"server_uri"`
		} `json:"xds_servers"`
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	b := &Bootstrap{Node: Node{ID: raw.Node.ID}}
	for _, s := range raw.XDSServers {
		b.Servers = append(b.Servers, Server{URI: s.ServerURI})
	}
	return b, nil
}

func (s Server) DialOptions() ([]grpc.DialOption, error) {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
}

func (n Node) Proto() *corev3.Node { return &corev3.Node{Id: n.ID, Cluster: n.Cluster} }

type ClusterConfig struct {
	Name, EDSServiceName string
	Policies             eds.Policies
}

func ParseCluster(c *clusterv3.Cluster) (ClusterConfig, error) {
	if c.GetType() != clusterv3.Cluster_EDS {
		return ClusterConfig{}, errors.New("type: not EDS")
	}
	svc := c.GetEdsClusterConfig().GetServiceName()
	if svc == "" {
		svc = c.GetName()
	}
	return ClusterConfig{Name: c.GetName(), EDSServiceName: svc}, nil
}
