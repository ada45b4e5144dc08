package browsertest

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// chromium returns the path of a Chromium or Chrome binary, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test skipped: no chromium on PATH (install Debian's chromium package: apt-get install -y chromium; .ci/run does this when it can)")
	return ""
}

// priorityConfig is a priority policy over p0 and p1, each round_robin.
const priorityConfig = `{"loadBalancingConfig":[{"priority_experimental":{
  "children":{"p0":{"config":[{"round_robin":{}}]},"p1":{"config":[{"round_robin":{}}]}},
  "priorities":["p0","p1"]}}]}`

// A person opening the debug page sees the active priority and each
// endpoint's state; after p0's backend is stopped, the page (refreshing by
// itself) shows p0's endpoint failing and p1 active.
func TestDebugPageInHeadlessChromium(t *testing.T) {
	browser := chromium(t)
	b0, b1 := httpbackend.New(t, "b0"), httpbackend.New(t, "b1")
	r := manual.NewBuilder("test", manual.WithInitialState(resolver.State{Addresses: []resolver.Address{
		hierarchy.Set(resolver.Address{Addr: b0.Addr()}, []string{"p0"}),
		hierarchy.Set(resolver.Address{Addr: b1.Addr()}, []string{"p1"}),
	}}))
	ch, err := conn.New("test:///demo", conn.WithResolver(r), conn.WithDefaultServiceConfig(priorityConfig),
		conn.WithHealthCheck(conn.HealthCheck{Interval: 100 * time.Millisecond, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	ch.Connect()

	page := httptest.NewServer(debugpage.New(ch))
	t.Cleanup(page.Close)
	ctx := openPage(t, browser, page.URL)

	b0Row := `tr[data-address="` + b0.Addr() + `"] [data-role="endpoint-state"]`
	waitForText(t, ctx, `[data-role="active-priority"]`, "active priority: p0")
	waitForText(t, ctx, b0Row, "READY")
	screenshot(t, ctx, "before")

	b0.Stop()
	waitForText(t, ctx, b0Row, "TRANSIENT_FAILURE")
	waitForText(t, ctx, `[data-role="active-priority"]`, "active priority: p1")
	waitForText(t, ctx, `tr[data-address="`+b1.Addr()+`"] [data-role="endpoint-state"]`, "READY")
	screenshot(t, ctx, "after")
}

// openPage opens url in a headless browser, closed when the test ends; the
// returned context also ends after a minute, a guard against a hang only.
func openPage(t *testing.T, browser, url string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening the page in %s: %v", browser, err)
	}
	return ctx
}

// waitForText waits until the element sel shows text containing want, as
// the page refreshes; it fails with the last text seen when ctx ends.
func waitForText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	waitFor(t, ctx, sel, want, func(got string) bool { return strings.Contains(got, want) })
}

// waitFor waits until the text of the element sel satisfies ok, as the
// page refreshes; it fails with the last text seen, and what was wanted,
// when ctx ends.
func waitFor(t *testing.T, ctx context.Context, sel, want string, ok func(string) bool) {
	t.Helper()
	var last string
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		got, err := chromedp.Run(attempt, chromedp.Text(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			last = got
			if ok(got) {
				return
			}
		}
		select {
		case <-ctx.Done():
			late, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			body, _ := chromedp.Run(late, chromedp.Text(chromedp.CSS("body")))
			cancel()
			t.Fatalf("the page never showed %q in %s; last seen %q; page text:\n%s", want, sel, last, body)
		case <-time.After(100 * time.Millisecond): // the page refreshes every second
		}
	}
}

// screenshot saves the page as a PNG when LBKIT_SCREENSHOTS names a
// directory, for a person to look at; otherwise it does nothing.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("LBKIT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(dir+"/"+name+".png", png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}
