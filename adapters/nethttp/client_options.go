package nethttp

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/conn"
)

// DefaultHostIdleTimeout is how long a [Client] keeps a host's channel
// with no request in flight before it closes it, when [WithIdleTimeout]
// is not given.
const DefaultHostIdleTimeout = 15 * time.Minute

// DefaultClientServiceConfig is the service config a [Client]'s channels
// start from: round_robin over every address the target resolves to.
// [WithChannelOptions] and [Route].Options may set another.
const DefaultClientServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Route says how a [Client] reaches one host: the target of the host's
// channel and the settings of its channel and [Transport].
type Route struct {
	// Target is the host's channel target, such as
	// "dns:///users.internal:8080" or "static:///10.0.0.1:80,10.0.0.2:80".
	// It must not be empty.
	Target string
	// Options configure the host's channel. They apply after the client's
	// (DefaultClientServiceConfig, WithClock's clock, then
	// [WithChannelOptions]), so they win where both set something.
	Options []conn.Option
	// Transport, if not nil, is the template of the host's Transport: its
	// Base, WaitForReady, Classify and MaxAttempts are copied. Its Channel
	// must be nil: the client makes the channel. If nil, the template of
	// [WithTransport] is used.
	Transport *Transport
}

// DefaultRoute is the route of a host that neither [WithRoute] nor
// [WithRouteFunc] names: the host through DNS, "dns:///" + host, with
// port 80 for http and 443 for https when the host names none. A scheme
// other than http and https is an error.
func DefaultRoute(scheme, host string) (Route, error) {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return Route{Target: "dns:///" + host}, nil
	}
	port := map[string]string{"http": "80", "https": "443"}[scheme]
	if port == "" {
		return Route{}, fmt.Errorf("no default port for scheme %q (http and https have one)", scheme)
	}
	return Route{Target: "dns:///" + net.JoinHostPort(strings.Trim(host, "[]"), port)}, nil
}

// ClientOption configures a [Client].
type ClientOption interface{ applyClient(*clientConfig) }

type clientOptionFunc func(*clientConfig)

func (f clientOptionFunc) applyClient(c *clientConfig) { f(c) }

type clientConfig struct {
	routes      map[string]Route // by host key, scheme://host
	routeFunc   func(scheme, host string) (Route, error)
	channelOpts []conn.Option
	transport   *Transport
	idleTimeout time.Duration
	clock       clock.Clock
	errs        []error // invalid options
}

// WithRoute makes requests to host, written "scheme://host[:port]" as in
// the requests' URLs (such as "http://users" or "https://billing:8443"),
// use r. It is looked up before [WithRouteFunc]. An invalid host or an
// empty Target is NewClient's error. If this option is not supplied for a
// host, WithRouteFunc's function decides.
func WithRoute(host string, r Route) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		key, err := parseHostKey(host)
		if err == nil && r.Target == "" {
			err = errors.New("Route.Target is empty")
		}
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithRoute(%q): %w", host, err))
			return
		}
		if c.routes == nil {
			c.routes = map[string]Route{}
		}
		c.routes[key] = r
	})
}

// WithRouteFunc makes f decide the route of every host [WithRoute] does
// not name, once per channel: f gets the request URL's scheme and host,
// lower-cased ("http", "users:8080"), and returns the route, or an error
// that fails the requests to that host (and is asked again at the next
// request). f may be called from several goroutines at once. If this
// option is not supplied, it is [DefaultRoute].
func WithRouteFunc(f func(scheme, host string) (Route, error)) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if f == nil {
			c.errs = append(c.errs, errors.New("WithRouteFunc(nil)"))
			return
		}
		c.routeFunc = f
	})
}

// WithChannelOptions configures every host's channel with opts, after the
// client's own (DefaultClientServiceConfig, and WithClock's clock) and
// before the host's [Route].Options. If this option is not supplied, the
// channels have conn's defaults but for those two.
func WithChannelOptions(opts ...conn.Option) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.channelOpts = append(c.channelOpts, opts...) })
}

// WithTransport makes t the template of every host's [Transport] that its
// [Route] gives none: its Base, WaitForReady, Classify, MaxAttempts,
// RequestHash and DecodeBinLoadReport are copied; its Channel must be nil. If this option
// is not supplied, the template is the zero Transport (http.DefaultTransport's settings, fail
// fast, [DefaultClassifier], [DefaultMaxAttempts]).
func WithTransport(t *Transport) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if err := checkTemplate(t); err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithTransport: %w", err))
			return
		}
		c.transport = t
	})
}

// WithIdleTimeout makes the client close a host's channel, its Transport
// and every connection it pooled once no request to the host has been in
// flight for d (a request is in flight until its response body is read
// to the end or closed); the next request to the host makes a new
// channel. 0 keeps channels until Close. If this option is not supplied,
// it is [DefaultHostIdleTimeout].
func WithIdleTimeout(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if d < 0 {
			c.errs = append(c.errs, fmt.Errorf("WithIdleTimeout: must be >= 0, got %v", d))
			return
		}
		c.idleTimeout = d
	})
}

// WithClock times the idle periods on c, and gives c to every channel
// (conn.WithClock) before [WithChannelOptions], which may set another.
// If this option is not supplied, the real clock is used.
func WithClock(c clock.Clock) ClientOption {
	return clientOptionFunc(func(cfg *clientConfig) { cfg.clock = c })
}

// checkTemplate reports what makes t unfit as a Transport template.
func checkTemplate(t *Transport) error {
	if t != nil && t.Channel != nil {
		return errors.New("the template's Channel must be nil: the client makes each host's channel")
	}
	return nil
}

// parseHostKey returns the key of a host written "scheme://host[:port]":
// the scheme and host lower-cased, as in a request's URL.
func parseHostKey(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", errors.New(`want "scheme://host[:port]", such as "http://users"`)
	}
	return hostKey(u), nil
}

// hostKey returns the key of u's host: its scheme and host, lower-cased.
func hostKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}
