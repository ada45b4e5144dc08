package conn

import (
	"context"
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

// Conn is an open connection a channel watches.
type Conn interface {
	// Lost is closed when the connection is lost (peer close, reset, or
	// Close).
	Lost() <-chan struct{}
	// Close closes the connection. It is called once, and must return
	// only after every goroutine the Conn started has ended.
	Close() error
}

// TCPDialer dials TCP, or a Unix socket for an address from the unix
// resolver or one starting with "/" or "@" (abstract). Its connection is a liveness probe owned by the channel:
// the dialer reads from it, discarding any bytes, to notice a peer close or
// reset without the user reading the socket; requests go over connections
// of the user's own client (for HTTP, net/http's pool).
type TCPDialer struct {
	// Dialer is the net.Dialer used; its zero value is the default.
	Dialer net.Dialer
}

// Dial connects to addr.Addr.
func (d TCPDialer) Dial(ctx context.Context, addr resolver.Address) (Conn, error) {
	network := "tcp"
	if n, ok := unix.Network(addr); ok {
		network = n
	} else if strings.HasPrefix(addr.Addr, "/") || strings.HasPrefix(addr.Addr, "@") {
		network = "unix"
	}
	nc, err := d.Dialer.DialContext(ctx, network, addr.Addr)
	if err != nil {
		return nil, err
	}
	return newProbeConn(nc), nil
}

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
