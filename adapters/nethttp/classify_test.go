package nethttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// outcomePolicy is a test policy: one SubConn for the first address, and a
// picker whose Done sends each request's whole DoneInfo.
type outcomePolicy struct {
	cc       lb.ClientConn
	sc       lb.SubConn
	outcomes chan<- lb.DoneInfo
}

type outcomeBuilder struct {
	name     string
	outcomes chan<- lb.DoneInfo
}

func (b outcomeBuilder) Name() string { return b.name }
func (b outcomeBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &outcomePolicy{cc: cc, outcomes: b.outcomes}
}

func (p *outcomePolicy) UpdateClientConnState(s lb.ClientConnState) error {
	if p.sc != nil {
		return nil
	}
	var err error
	p.sc, err = p.cc.NewSubConn(s.ResolverState.Addresses[:1], lb.NewSubConnOptions{StateListener: func(st lb.SubConnState) {
		if st.ConnectivityState == lb.Ready {
			p.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: p})
		}
	}})
	if err != nil {
		return err
	}
	p.sc.Connect()
	p.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
	return nil
}

func (p *outcomePolicy) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: p.sc, Done: func(i lb.DoneInfo) {
		// Metadata is valid only during Done: copy what the test reads.
		if i.Metadata != nil {
			i.Metadata = http.Header{"X-Backend": {i.Metadata.Get("X-Backend")}}
		}
		p.outcomes <- i
	}}, nil
}
func (p *outcomePolicy) ResolverError(error) {}
func (p *outcomePolicy) ExitIdle()           {}
func (p *outcomePolicy) Close()              { p.sc.Shutdown() }

// statusBackend answers every request with the status in its path
// ("/503"), or 200, and an X-Backend header; on "/hangup" it closes the
// request's connection without answering.
func statusBackend(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hangup" {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.Header().Set("X-Backend", "b1")
		code := http.StatusOK
		fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s
}

// outcomeClient returns an http.Client over a channel to backend s whose
// policy (registered as name) sends each request's DoneInfo on the
// returned channel, with classify as the Transport's Classify, and the
// Transport.
func outcomeClient(t *testing.T, name string, s *httptest.Server, classify nethttp.Classifier) (*http.Client, *nethttp.Transport, <-chan lb.DoneInfo) {
	t.Helper()
	outcomes := make(chan lb.DoneInfo, 10)
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: []string{hostOf(s)}}),
		conn.WithRegistry(lb.NewRegistry(outcomeBuilder{name: name, outcomes: outcomes})),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+name+`":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true, Classify: classify}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, tr, outcomes
}

func nextOutcome(t *testing.T, outcomes <-chan lb.DoneInfo) lb.DoneInfo {
	t.Helper()
	select {
	case i := <-outcomes:
		return i
	case <-time.After(10 * time.Second): // hang guard only
		t.Fatal("Done not called")
		return lb.DoneInfo{}
	}
}

func TestDefaultClassifierFailsOn5xxAndKeepsTheResponse(t *testing.T) {
	s := statusBackend(t)
	client, _, outcomes := outcomeClient(t, "test_outcome_default", s, nil)
	for _, tc := range []struct {
		code int
		fail bool
	}{{200, false}, {404, false}, {499, false}, {500, true}, {503, true}, {599, true}} {
		url := fmt.Sprintf("http://svc/%d", tc.code)
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: caller got status %d, want %d unchanged", url, resp.StatusCode, tc.code)
		}
		i := nextOutcome(t, outcomes)
		if i.Status != tc.code || i.Metadata == nil || i.Metadata.Get("x-backend") != "b1" {
			t.Errorf("GET %s: DoneInfo status %d metadata %v, want %d with X-Backend b1", url, i.Status, i.Metadata, tc.code)
		}
		var se *nethttp.StatusError
		switch {
		case !tc.fail && i.Err != nil:
			t.Errorf("GET %s: DoneInfo.Err = %v, want nil", url, i.Err)
		case tc.fail && (!errors.As(i.Err, &se) || se.StatusCode != tc.code):
			t.Errorf("GET %s: DoneInfo.Err = %v, want a *nethttp.StatusError for %d", url, i.Err, tc.code)
		}
	}
}

// A connection that breaks before the response (the backend hangs up) is a
// failure with no status. The backend stays up, so the channel keeps its
// connection READY and the request is always sent.
func TestDefaultClassifierFailsOnConnectionError(t *testing.T) {
	s := statusBackend(t)
	client, _, outcomes := outcomeClient(t, "test_outcome_conn_error", s, nil)
	get(t, client, "http://svc/")
	nextOutcome(t, outcomes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // hang guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/hangup", nil)
	if _, err := client.Do(req); err == nil {
		t.Fatal("a request whose connection was closed succeeded")
	}
	if i := nextOutcome(t, outcomes); i.Err == nil || i.Status != 0 || i.Metadata != nil {
		t.Fatalf("DoneInfo %+v, want an error, no status, no metadata", i)
	}
}

func TestCustomClassifierReplacesTheRule(t *testing.T) {
	s := statusBackend(t)
	errThrottled := errors.New("throttled")
	client, _, outcomes := outcomeClient(t, "test_outcome_custom", s, func(resp *http.Response, err error) error {
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			return errThrottled
		}
		return err // 5xx count as successes under this rule
	})
	for code, want := range map[int]error{429: errThrottled, 503: nil, 200: nil} {
		resp, err := client.Get(fmt.Sprintf("http://svc/%d", code))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i := nextOutcome(t, outcomes); !errors.Is(i.Err, want) || (want == nil && i.Err != nil) {
			t.Errorf("status %d: DoneInfo.Err = %v, want %v", code, i.Err, want)
		}
	}
}

func TestDefaultClassifierRules(t *testing.T) {
	errDial := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name string
		resp *http.Response
		err  error
		fail bool
	}{
		{"200", &http.Response{StatusCode: 200}, nil, false},
		{"404", &http.Response{StatusCode: 404}, nil, false},
		{"500", &http.Response{StatusCode: 500}, nil, true},
		{"no response", nil, errDial, true},
		{"body read error", &http.Response{StatusCode: 200}, io.ErrUnexpectedEOF, true},
		{"caller cancelled", nil, fmt.Errorf("get: %w", context.Canceled), false},
		{"deadline", nil, fmt.Errorf("get: %w", context.DeadlineExceeded), true},
	} {
		if got := nethttp.DefaultClassifier(tc.resp, tc.err); (got != nil) != tc.fail {
			t.Errorf("%s: DefaultClassifier = %v, want failure %v", tc.name, got, tc.fail)
		}
	}
}
