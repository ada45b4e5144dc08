package nethttp

import "net/http"

// CloseIdleConnections closes the idle connections of the underlying
// transport, when it has such a method.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.roundTripper().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

var _ http.RoundTripper = (*Transport)(nil)
