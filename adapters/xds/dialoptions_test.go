package xds_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/lbtest/testpki"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	caFile, certFile, keyFile string // client side
	server                    tls.Certificate
	pool                      *x509.CertPool
	ca                        *testpki.CA
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t)
	p := testPKI{pool: ca.Pool, ca: ca}
	srvDER, srvKey := ca.Issue(t, testpki.Leaf{CommonName: "127.0.0.1", Usage: x509.ExtKeyUsageServerAuth, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	p.caFile = testpki.WritePEM(t, dir, "ca.pem", "CERTIFICATE", ca.DER)
	p.certFile, p.keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	p.writeClient(t, "client-1")
	return p
}

// writeClient writes a new client certificate for cn, and its key, over
// the client's files.
func (p testPKI) writeClient(t *testing.T, cn string) {
	t.Helper()
	der, key := p.ca.Issue(t, testpki.Leaf{CommonName: cn, Usage: x509.ExtKeyUsageClientAuth})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	testpki.WritePEM(t, filepath.Dir(p.certFile), filepath.Base(p.certFile), "CERTIFICATE", der)
	testpki.WritePEM(t, filepath.Dir(p.keyFile), filepath.Base(p.keyFile), "EC PRIVATE KEY", keyDER)
}

// startServer starts a real gRPC server with no services on loopback and
// returns its address.
func startServer(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String()
}

// TestDialOptionsRereadsTheKeyPairAtEachHandshake rotates the client's
// certificate files between two connections made with the same options:
// the second handshake presents the new certificate.
func TestDialOptionsRereadsTheKeyPairAtEachHandshake(t *testing.T) {
	pki := newTestPKI(t)
	seen := make(chan string, 4)
	addr := startServer(t, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			seen <- cs.PeerCertificates[0].Subject.CommonName
			return nil
		},
	})))
	opts, err := xds.Server{URI: addr, Creds: xds.Creds{Type: "tls", CAFile: pki.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile}}.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	for _, cn := range []string{"client-1", "client-2"} {
		if cn != "client-1" {
			pki.writeClient(t, cn)
		}
		if code := invoke(t, addr, opts); code != codes.Unimplemented {
			t.Fatalf("call as %s: %v, want Unimplemented", cn, code)
		}
		select {
		case got := <-seen:
			if got != cn {
				t.Errorf("server saw client certificate %q, want %q", got, cn)
			}
		case <-time.After(10 * time.Second): // guards against a hang only
			t.Fatalf("the server verified no client certificate for %s", cn)
		}
	}
}

// callCode dials s with its DialOptions and returns the code of one call:
// Unimplemented means the connection, and so the handshake, worked.
func callCode(t *testing.T, s xds.Server) codes.Code {
	t.Helper()
	opts, err := s.DialOptions()
	if err != nil {
		t.Fatalf("DialOptions: %v", err)
	}
	return invoke(t, s.URI, opts)
}

// invoke makes one call on a new connection to target and returns its
// code.
func invoke(t *testing.T, target string, opts []grpc.DialOption) codes.Code {
	t.Helper()
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
	defer cancel()
	err = conn.Invoke(ctx, "/lbkit.test.Nothing/Call", &emptypb.Empty{}, &emptypb.Empty{})
	return status.Code(err)
}

func TestDialOptionsTLS(t *testing.T) {
	pki := newTestPKI(t)
	mtls := startServer(t, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool, ClientAuth: tls.RequireAndVerifyClientCert,
	})))
	serverTLS := startServer(t, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pki.server}})))
	plain := startServer(t)
	tests := []struct {
		name string
		srv  xds.Server
		want codes.Code
	}{
		{"mutual TLS", xds.Server{URI: mtls, Creds: xds.Creds{Type: "tls", CAFile: pki.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile}}, codes.Unimplemented},
		{"no client certificate for a server that wants one", xds.Server{URI: mtls, Creds: xds.Creds{Type: "tls", CAFile: pki.caFile}}, codes.Unavailable},
		{"server-only TLS", xds.Server{URI: serverTLS, Creds: xds.Creds{Type: "tls", CAFile: pki.caFile}}, codes.Unimplemented},
		{"system roots do not know the test CA", xds.Server{URI: serverTLS, Creds: xds.Creds{Type: "tls"}}, codes.Unavailable},
		{"insecure", xds.Server{URI: plain, Creds: xds.Creds{Type: "insecure"}}, codes.Unimplemented},
		{"insecure against TLS", xds.Server{URI: serverTLS, Creds: xds.Creds{Type: "insecure"}}, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := callCode(t, tt.srv); got != tt.want {
				t.Errorf("call through %+v: %v, want %v", tt.srv.Creds, got, tt.want)
			}
		})
	}
}

func TestDialOptionsErrors(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name  string
		creds xds.Creds
		want  []string
		is    error
	}{
		{"missing CA file", xds.Creds{Type: "tls", CAFile: missing}, []string{"ca_certificate_file", missing}, fs.ErrNotExist},
		{"CA file without PEM", xds.Creds{Type: "tls", CAFile: notPEM}, []string{"ca_certificate_file", notPEM, "no PEM certificate"}, nil},
		{"key pair unreadable", xds.Creds{Type: "tls", CertFile: pki.certFile, KeyFile: missing}, []string{"private_key_file", missing}, fs.ErrNotExist},
		{"certificate is not a key", xds.Creds{Type: "tls", CertFile: pki.certFile, KeyFile: pki.certFile}, []string{"certificate_file", pki.certFile}, nil},
		{"certificate without key", xds.Creds{Type: "tls", CertFile: pki.certFile}, []string{"must be set together"}, nil},
		{"unsupported type", xds.Creds{Type: "google_default"}, []string{`"google_default" is not supported`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := xds.Server{URI: "127.0.0.1:1", Creds: tt.creds}.DialOptions()
			if err == nil {
				t.Fatalf("DialOptions gave %d options, want an error", len(opts))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

// WithDialOptions's options reach the connection to the management
// server: a stream interceptor given with it sees the ADS stream. A
// Builder with dial options shares its client only among its own
// resolvers: another Builder for the same server opens a stream of its own.
func TestWithDialOptionsReachTheADSConnection(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}}),
	})
	var mu sync.Mutex
	var methods []string
	intercept := grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		return streamer(ctx, desc, cc, method, opts...)
	})
	withOptions := testBuilder(t, cp.addr, xds.WithDialOptions(intercept))
	clk := clock.NewMock()
	cc, _ := follow(t, withOptions, "c1", clk, &lbtest.Logs{})
	if got := endpoints(cc.NextState(t)); len(got) != 1 || got[0].addr != "10.0.0.1:80" {
		t.Fatalf("through a builder with dial options: %v", got)
	}
	mu.Lock()
	seen := slices.Clone(methods)
	mu.Unlock()
	if want := "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"; !slices.Equal(seen, []string{want}) {
		t.Errorf("the interceptor saw streams %q, want one %s", seen, want)
	}

	other, _ := follow(t, testBuilder(t, cp.addr), "c1", clk, &lbtest.Logs{})
	other.NextState(t)
	if n := cp.streamCount(); n != 2 {
		t.Errorf("%d ADS streams for a builder with dial options and one without, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(methods) != 1 {
		t.Errorf("the interceptor saw %d streams after another builder followed the cluster, want 1 (its own)", len(methods))
	}
}

// A nil option is NewBuilder's error, naming its position (issue 28).
func TestNewBuilderNamesANilOption(t *testing.T) {
	if _, err := xds.NewBuilder(nil); err == nil || err.Error() != "xds: NewBuilder: option 1 of 1 is nil" {
		t.Fatalf("NewBuilder(nil) = %v, want an error naming option 1", err)
	}
}
