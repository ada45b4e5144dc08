package conn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// headerTimeoutServer is a real HTTP server that closes a connection on
// which no request header arrives within 100 ms, as many servers do.
type headerTimeoutServer struct {
	addr string

	mu     sync.Mutex
	open   int // connections accepted and not yet closed
	closed int // connections closed, by either side
}

func newHeaderTimeoutServer(t *testing.T) *headerTimeoutServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &headerTimeoutServer{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 100 * time.Millisecond,
		ConnState: func(_ net.Conn, cs http.ConnState) {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch cs {
			case http.StateNew:
				s.open++
			case http.StateClosed, http.StateHijacked:
				s.open--
				s.closed++
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// idle reports whether the server has closed a connection and holds none.
func (s *headerTimeoutServer) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed > 0 && s.open == 0
}

// The default connection model holds nothing, so servers that close idle
// connections after 100 ms have nothing to close: once each server is done
// with every connection it accepted, the channel is READY, has lost none
// and watches none. The held probe, closed by the same servers, flaps.
func TestCheckModelDoesNotFlapAgainstHeaderTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dialer Dialer
		flaps  bool
	}{
		{"check (default)", nil, false},
		{"hold", TCPDialer{Hold: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers := []*headerTimeoutServer{newHeaderTimeoutServer(t), newHeaderTimeoutServer(t)}
			logs := &lbtest.Logs{}
			opts := []Option{WithLogger(slog.New(logs)),
				WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`)}
			if tc.dialer != nil {
				opts = append(opts, WithDialer(tc.dialer))
			}
			c, err := New("static:///"+servers[0].addr+","+servers[1].addr, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Connect()
			waitState(t, c, lb.Ready)
			lost := func() int { return logs.Count(slog.LevelDebug, "connection lost") }
			if tc.flaps {
				waitUntil(t, "the held probe loses a connection to a 100 ms header timeout", func() bool { return lost() > 0 })
				return
			}
			waitUntil(t, "both connections are READY", func() bool {
				got := readyConns(c)
				return len(got) == 2 && got[0] && got[1]
			})
			// Each server has closed what it accepted: a held connection
			// would now be lost (the hold case shows it).
			waitUntil(t, "both servers are done with every connection", func() bool {
				return servers[0].idle() && servers[1].idle()
			})
			settle(t, c)
			if n := lost(); n != 0 {
				t.Fatalf("%d connections lost, want none", n)
			}
			if got := readyConns(c); len(got) != 2 || !got[0] || !got[1] {
				t.Fatalf("connections READY: %v, want both still", got)
			}
			if n := watchedConns(c); n != 0 {
				t.Fatalf("%d connections watched for loss, want none", n)
			}
		})
	}
}

// watchedConns returns how many of the channel's connections are held and
// watched for loss; read inside the serializer.
func watchedConns(c *Channel) int {
	n := 0
	_ = c.ser.Run(context.Background(), func() {
		for _, ac := range c.addrConns {
			if ac.conn != nil && ac.conn.Lost() != nil {
				n++
			}
		}
	})
	return n
}

// With TLS set, the check is a full handshake: the TLS server logs nothing,
// and a certificate that names only a hostname is verified against it.
func TestTLSCheckDoesNotTroubleTLSServers(t *testing.T) {
	var serverLog bytes.Buffer
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	closed := make(chan struct{}, 10)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Config.ErrorLog = log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return serverLog.Write(p)
	}), "", 0)
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	// httptest's certificate names example.com (and 127.0.0.1).
	c, err := New("static:///"+addr, WithDialer(TCPDialer{TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Pick(guard(t), PickOptions{WaitForReady: true}); err != nil {
		t.Fatalf("Pick: %v", err)
	}
	c.Close()
	select { // the server has finished with the check's connection
	case <-closed:
	case <-guard(t).Done():
		t.Fatal("the server never closed the check's connection")
	}
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(serverLog.String(), "handshake error") {
		t.Fatalf("the TLS server logged: %s", serverLog.String())
	}

	// A wrong server name fails the check: the SubConn never becomes READY.
	bad, err := New("static:///"+addr, WithDialer(TCPDialer{TLS: &tls.Config{RootCAs: roots, ServerName: "other.test"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bad.Connect()
	waitState(t, bad, lb.TransientFailure)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The default model keeps no goroutine per endpoint; the held probe keeps
// one per endpoint (two, with the dialer's reader).
func TestCheckModelHoldsNoGoroutinePerEndpoint(t *testing.T) {
	const endpoints = 40
	var targets []string
	for range endpoints {
		targets = append(targets, newHeaderTimeoutServer(t).addr)
	}
	growth := func(d Dialer) int {
		before := runtime.NumGoroutine()
		opts := []Option{WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`)}
		if d != nil {
			opts = append(opts, WithDialer(d))
		}
		c, err := New("static:///"+strings.Join(targets, ","), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Connect()
		waitState(t, c, lb.Ready)
		ready := 0
		ctx := guard(t)
		for ready < endpoints && ctx.Err() == nil { // every endpoint READY
			ready = 0
			for _, ac := range readyConns(c) {
				if ac {
					ready++
				}
			}
			time.Sleep(time.Millisecond)
		}
		return runtime.NumGoroutine() - before
	}
	if g := growth(nil); g >= endpoints/4 {
		t.Fatalf("check model: %d goroutines for %d READY endpoints, want none per endpoint", g, endpoints)
	}
	if g := growth(TCPDialer{Hold: true}); g < endpoints {
		t.Fatalf("hold model: %d goroutines for %d endpoints, want at least one each", g, endpoints)
	}
}

// readyConns reports, for each connection of the channel, whether it is
// READY; read inside the serializer.
func readyConns(c *Channel) []bool {
	var out []bool
	_ = c.ser.Run(context.Background(), func() {
		for _, ac := range c.addrConns {
			out = append(out, ac.state == lb.Ready)
		}
	})
	return out
}
