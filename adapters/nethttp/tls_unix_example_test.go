package nethttp_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// HTTPS to backends picked by address: the request names the service, and
// the certificate is checked against that name (and sent as SNI), while the
// connection goes to the picked address.
func Example_tls() {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "TLS to %s", r.TLS.ServerName)
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate()) // httptest's certificate names example.com

	ch, err := conn.New("static:///" + strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: roots}
	tr := &nethttp.Transport{Channel: ch, Base: base, WaitForReady: true}
	defer tr.CloseIdleConnections()
	fmt.Println(fetchURL(&http.Client{Transport: tr}, "https://example.com/"))
	// Output: TLS to example.com
}

// Backends on Unix sockets: a unix: target, and requests that name the
// service as usual.
func Example_unixSocket() {
	dir, err := os.MkdirTemp("", "lbkit")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s over a unix socket", r.Host)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	ch, err := conn.New("unix://" + sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	fmt.Println(fetchURL(&http.Client{Transport: tr}, "http://my-service/"))
	// Output: my-service over a unix socket
}

func fetchURL(c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
