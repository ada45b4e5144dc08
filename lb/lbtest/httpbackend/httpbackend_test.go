package httpbackend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// get sends one GET to b's path with ctx, and returns the status and body.
func get(ctx context.Context, t *testing.T, b *httpbackend.Backend, path string) (int, string, http.Header, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.Addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, err
}

// heldUntilCanceled sends a GET for path to b, cancels it once the request
// is written, and returns how it ended: context.Canceled when b held it,
// nil (or, rarely, context.Canceled) when b answered at once.
func heldUntilCanceled(t *testing.T, b *httpbackend.Backend, path string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(guard(t))
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { cancel() },
	})
	_, _, _, err := get(ctx, t, b, path)
	return err
}

// guard is a context that only guards against a hang.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAnswersWithItsName(t *testing.T) {
	b := httpbackend.New(t, "a")
	code, body, h, err := get(guard(t), t, b, "/x")
	if err != nil || code != http.StatusOK || body != "a" || h.Get("X-Backend") != "a" {
		t.Fatalf("GET /x = %d %q (X-Backend %q), %v; want 200 \"a\"", code, body, h.Get("X-Backend"), err)
	}
	if b.Name() != "a" || b.Port() == "" || b.Addr() != "127.0.0.1:"+b.Port() {
		t.Errorf("Name %q, Addr %q, Port %q", b.Name(), b.Addr(), b.Port())
	}
}

func TestFailingAnswers503ButHealthz(t *testing.T) {
	b := httpbackend.New(t, "a")
	b.SetFailing(true)
	if code, body, _, err := get(guard(t), t, b, "/x"); err != nil || code != http.StatusServiceUnavailable || body != "a" {
		t.Errorf("failing: GET /x = %d %q, %v; want 503 \"a\"", code, body, err)
	}
	if code, _, _, err := get(guard(t), t, b, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("failing: GET /healthz = %d, %v; want 200", code, err)
	}
	b.SetFailing(false)
	if code, _, _, err := get(guard(t), t, b, "/x"); err != nil || code != http.StatusOK {
		t.Errorf("after SetFailing(false): GET /x = %d, %v; want 200", code, err)
	}
}

// A slow backend holds the request (the test cancels it rather than wait
// an hour), but not /healthz; SetDelay(0) answers at once again.
func TestDelayHoldsRequestsButHealthz(t *testing.T) {
	b := httpbackend.New(t, "a")
	b.SetDelay(time.Hour)
	if err := heldUntilCanceled(t, b, "/x"); !errors.Is(err, context.Canceled) {
		t.Errorf("slow: GET /x ended with %v; want it held until canceled", err)
	}
	if code, _, _, err := get(guard(t), t, b, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("slow: GET /healthz = %d, %v; want 200 at once", code, err)
	}
	b.SetDelay(0)
	if code, _, _, err := get(guard(t), t, b, "/x"); err != nil || code != http.StatusOK {
		t.Errorf("after SetDelay(0): GET /x = %d, %v; want 200", code, err)
	}
}

// A hanging backend holds every request, /healthz too, until it stops
// hanging, then answers them.
func TestHangingHoldsUntilReleased(t *testing.T) {
	b := httpbackend.New(t, "a")
	b.SetHanging(true)
	b.SetHanging(true) // again: releases nothing it should not
	if err := heldUntilCanceled(t, b, "/healthz"); !errors.Is(err, context.Canceled) {
		t.Errorf("hanging: GET /healthz ended with %v; want it held until canceled", err)
	}
	answered := make(chan int, 1)
	go func() {
		code, _, _, _ := get(guard(t), t, b, "/x")
		answered <- code
	}()
	b.SetHanging(false)
	if code := <-answered; code != http.StatusOK {
		t.Errorf("released: GET /x = %d; want 200", code)
	}
}

func TestStopAndRestartOnTheSamePort(t *testing.T) {
	b := httpbackend.New(t, "a")
	b.Stop()
	b.Stop() // a stopped backend: nothing
	if _, _, _, err := get(guard(t), t, b, "/x"); err == nil {
		t.Fatal("GET after Stop succeeded")
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if code, body, _, err := get(guard(t), t, b, "/x"); err != nil || code != http.StatusOK || body != "a" {
		t.Errorf("after Restart: GET /x = %d %q, %v; want 200 \"a\"", code, body, err)
	}
}

func TestCountBodies(t *testing.T) {
	b := httpbackend.New(t, "a")
	client := &http.Client{}
	defer client.CloseIdleConnections()
	got := httpbackend.CountBodies(t, client, "http://"+b.Addr()+"/", 3)
	if len(got) != 1 || got["a"] != 3 {
		t.Errorf("CountBodies = %v; want map[a:3]", got)
	}
}

func Example() {
	b, err := httpbackend.Start("blue")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Stop()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	b.SetFailing(true) // as a backend whose dependency is down
	for _, path := range []string{"/orders", "/healthz"} {
		resp, err := client.Get("http://" + b.Addr() + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, string(body))
	}
	// Output:
	// /orders 503 blue
	// /healthz 200 blue
}
