package dns_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/internal/dnstest"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// A channel whose dns resolver asks the DNS server again every 10 s, and
// on a lost connection at most every 10 s, so backends added to or removed
// from DNS are seen within 10 s. Its snapshot shows the settings, and what
// went wrong while a lookup fails.
func ExampleWithPollInterval() {
	backend, _ := httpbackend.Start("one")
	defer backend.Stop()
	server, _ := dnstest.Start() // a DNS server on loopback, for the example
	defer server.Close()
	server.Set("my-service.test", netip.MustParseAddr("127.0.0.1"))

	b, err := dns.NewBuilder(dns.WithPollInterval(10*time.Second), dns.WithMinResolutionInterval(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := conn.New("dns://"+server.Addr()+"/my-service.test:"+backend.Port(), conn.WithResolver(b))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://my-service/")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("answered by", string(body))

	snap, _ := ch.Snapshot(context.Background())
	for _, f := range snap.Resolver.Facts[2:] { // after the host and the DNS server
		fmt.Printf("%s: %s\n", f.Name, f.Value)
	}

	// A poll interval below the floor is refused.
	_, err = dns.NewBuilder(dns.WithPollInterval(time.Second))
	fmt.Println(err)
	// Output:
	// answered by one
	// poll interval: 10s
	// min resolution interval: 10s
	// addresses published: 1
	// dns: NewBuilder: WithPollInterval(1s): below the floor WithMinResolutionInterval(30s); lower the floor or poll less often
}
