// Package nethttp balances net/http requests with an lbkit [conn.Channel].
//
// [Transport] is an http.RoundTripper: for each request it picks a READY
// connection from the channel, sends the request to that address with the
// Host header kept, and reports the outcome to the policy. Connections are
// pooled per address by the underlying *http.Transport.
//
// # Concurrency
//
// A Transport is safe for concurrent use, like any http.RoundTripper.
package nethttp

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// Transport sends each request to the address its Channel picks.
type Transport struct {
	// Channel picks the backend for each request. It must not be nil.
	Channel *conn.Channel
	// Base sends the rewritten request and pools connections per
	// address. If nil, a clone of http.DefaultTransport is made on first
	// use.
	Base http.RoundTripper
	// WaitForReady makes requests wait through TRANSIENT_FAILURE for a
	// backend instead of failing at once. Default: fail fast.
	WaitForReady bool
	// Classify decides, for the policy, whether a request failed; see
	// [Classifier]. If nil, [DefaultClassifier] is used: connection
	// errors and 5xx responses are failures. It changes only what the
	// policy hears: the caller still gets the response (or error)
	// unchanged.
	Classify Classifier

	once sync.Once
	base http.RoundTripper
}

func (t *Transport) roundTripper() http.RoundTripper {
	t.once.Do(func() {
		t.base = t.Base
		if t.base == nil {
			t.base = http.DefaultTransport.(*http.Transport).Clone()
		}
	})
	return t.base
}

// RoundTrip picks a backend, sends req to it with req's Host header, and
// calls the pick's Done when the response body is closed or read to the end
// (or at once on error). Done gets the response's status code and headers,
// and the error Classify returns (nil: success). A request that cannot
// reach the backend (a dial error) is reported to the channel, which
// re-checks that connection.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Channel == nil {
		return nil, errors.New("nethttp: Transport.Channel is nil")
	}
	picked, err := t.Channel.Pick(req.Context(), conn.PickOptions{WaitForReady: t.WaitForReady, Method: req.URL.Path})
	if err != nil {
		closeBody(req)
		return nil, fmt.Errorf("nethttp: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	out := req.Clone(req.Context())
	if out.Host == "" {
		out.Host = req.URL.Host
	}
	out.URL.Host = picked.SubConn.Address().Addr
	resp, err := t.roundTripper().RoundTrip(out)
	if err != nil {
		if isDialError(err) {
			picked.SubConn.ReportError(err)
		}
		if picked.Done != nil {
			picked.Done(lb.DoneInfo{Err: t.classify(nil, err)})
		}
		return nil, err
	}
	if picked.Done != nil {
		resp.Body = &doneBody{ReadCloser: resp.Body, done: func(err error) {
			picked.Done(lb.DoneInfo{Err: t.classify(resp, err), Status: resp.StatusCode, Metadata: resp.Header})
		}}
	}
	return resp, nil
}

func (t *Transport) classify(resp *http.Response, err error) error {
	if t.Classify != nil {
		return t.Classify(resp, err)
	}
	return DefaultClassifier(resp, err)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// isDialError reports whether err means the backend could not be reached.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// doneBody calls done once, when the body hits EOF, fails, or is closed.
type doneBody struct {
	io.ReadCloser
	once sync.Once
	done func(error)
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.once.Do(func() { b.done(nil) })
	case err != nil:
		b.once.Do(func() { b.done(err) })
	}
	return n, err
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(nil) })
	return err
}
