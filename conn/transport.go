package conn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/unix"
)

// Dialer opens connections for a channel's SubConns.
type Dialer interface {
	// Dial connects to addr, giving up when ctx ends. It may be called
	// from several goroutines at once.
	Dial(ctx context.Context, addr resolver.Address) (Conn, error)
}

// Conn is what a Dialer returns for a backend it reached.
type Conn interface {
	// Lost is closed when the connection is lost (peer close, reset, or
	// Close). A nil channel means the channel watches nothing: the SubConn
	// stays READY until a request reports a failure
	// ([SubConn.ReportError]) or a health check fails.
	Lost() <-chan struct{}
	// Close closes the connection. It is called once, and must return
	// only after every goroutine the Conn started has ended.
	Close() error
}

// TCPDialer connects over TCP, or a Unix socket for an address from the
// unix resolver or one starting with "/" or "@" (abstract). Requests go
// over connections of the user's own client (for HTTP, net/http's pool);
// the dialer only judges whether the backend is there. It has two models:
//
//   - Check (the default): a connection is made, and closed at once. The
//     SubConn is READY from then until a request reports a failure
//     ([SubConn.ReportError]) or a health check fails. Nothing is held: no
//     socket and no goroutine per endpoint, and no connection for a server's
//     header or idle timeout to close. With TLS set, the check is a full TLS
//     handshake (closed with close_notify), so a TLS server sees an ordinary
//     client rather than a failed handshake.
//   - Hold: the connection is kept open and read, discarding any bytes, to
//     notice a peer close or reset without a request. It notices a dead
//     backend sooner, but costs a socket and a goroutine per endpoint, and
//     servers that close idle connections (HTTP header or idle timeouts)
//     make the SubConn flap. Use it for raw TCP backends that keep idle
//     connections open.
//
// See docs/choices.md for which model suits which client.
type TCPDialer struct {
	// Dialer is the net.Dialer used; its zero value is the default.
	Dialer net.Dialer
	// TLS, when not nil, makes each connection a TLS handshake with this
	// config. Its ServerName, if empty, is the address's ServerName, else
	// the address's host.
	TLS *tls.Config
	// Hold keeps each connection open and watches it for loss.
	Hold bool
}

// Dial connects to addr.Addr.
func (d TCPDialer) Dial(ctx context.Context, addr resolver.Address) (Conn, error) {
	nc, err := dialBackend(ctx, d.Dialer, addr)
	if err != nil {
		return nil, err
	}
	if d.TLS != nil {
		tc := tls.Client(nc, d.tlsConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	if d.Hold {
		return newProbeConn(nc), nil
	}
	_ = nc.Close()
	return checkedConn{}, nil
}

// DialAddress connects to addr as the channel's dialers do: over TCP, or a
// Unix socket for an address from the unix resolver or one starting with
// "/" or "@" (abstract). Clients that send requests to picked addresses
// (adapters/nethttp) dial with it, so unix: targets work for them too.
func DialAddress(ctx context.Context, d *net.Dialer, addr resolver.Address) (net.Conn, error) {
	return dialBackend(ctx, *d, addr)
}

// dialBackend connects to addr; see DialAddress.
func dialBackend(ctx context.Context, d net.Dialer, addr resolver.Address) (net.Conn, error) {
	network := "tcp"
	if n, ok := unix.Network(addr); ok {
		network = n
	} else if strings.HasPrefix(addr.Addr, "/") || strings.HasPrefix(addr.Addr, "@") {
		network = "unix"
	}
	return d.DialContext(ctx, network, addr.Addr)
}

// tlsConfig returns the TLS config for addr, with its server name set.
func (d TCPDialer) tlsConfig(addr resolver.Address) *tls.Config {
	cfg := d.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = addr.ServerName
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr.Addr)
			if err != nil {
				host = addr.Addr
			}
			cfg.ServerName = host
		}
	}
	return cfg
}

// checkedConn stands for a connection that was made and closed: nothing is
// watched (Lost is nil) and nothing is left to close.
type checkedConn struct{}

func (checkedConn) Lost() <-chan struct{} { return nil }
func (checkedConn) Close() error          { return nil }

// probeConn watches a net.Conn for loss by reading from it.
type probeConn struct {
	nc       net.Conn
	lost     chan struct{}
	readDone chan struct{}
	once     sync.Once
}

func newProbeConn(nc net.Conn) *probeConn {
	c := &probeConn{nc: nc, lost: make(chan struct{}), readDone: make(chan struct{})}
	go c.watch()
	return c
}

func (c *probeConn) watch() {
	defer close(c.readDone)
	var buf [512]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			c.once.Do(func() { close(c.lost) })
			return
		}
	}
}

func (c *probeConn) Lost() <-chan struct{} { return c.lost }

func (c *probeConn) Close() error {
	err := c.nc.Close()
	<-c.readDone
	return err
}
