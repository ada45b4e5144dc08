package nethttp_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/lbtest/testpki"
)

// The certificate is checked against the request's host, and that host is
// the SNI: a backend whose certificate names only "my-service" is reached
// at its IP address.
func TestTLSUsesTheRequestsHost(t *testing.T) {
	cert, roots := testpki.SelfSigned(t, testpki.Leaf{CommonName: "my-service", Usage: x509.ExtKeyUsageServerAuth, DNSNames: []string{"my-service"}})
	var sni string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni = r.TLS.ServerName
		io.WriteString(w, "hello from "+r.Host)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	ch, err := conn.New("static:///" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: roots}
	tr := &nethttp.Transport{Channel: ch, Base: base, WaitForReady: true}
	defer tr.CloseIdleConnections()
	if got := get(t, &http.Client{Transport: tr}, "https://my-service/x"); got != "hello from my-service" {
		t.Fatalf("response %q", got)
	}
	if sni != "my-service" {
		t.Fatalf("SNI %q, want my-service", sni)
	}
}

// A unix: target's backend is reached over its socket.
func TestUnixSocketBackend(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix sockets: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "unix "+r.Host)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	ch, err := conn.New("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	if got := get(t, &http.Client{Transport: tr}, "http://my-service/"); got != "unix my-service" {
		t.Fatalf("response %q", got)
	}
}
