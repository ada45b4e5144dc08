package browsertest

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// An SRE watching a drain sees it: of two real backends behind
// round_robin, the one the resolver marks draining (as EDS DRAINING does)
// shows a "draining" mark beside its state, the other none; once the
// resolver clears the mark, the page, refreshing by itself, drops it
// (issue 27).
func TestDebugPageShowsDrainingEndpoints(t *testing.T) {
	browser := chromium(t)
	kept, leaving := httpbackend.New(t, "kept"), httpbackend.New(t, "leaving")
	state := func(drain bool) resolver.State {
		l := resolver.Address{Addr: leaving.Addr()}
		if drain {
			l = draining.Set(l)
		}
		return resolver.State{Addresses: []resolver.Address{{Addr: kept.Addr()}, l}}
	}
	r := manual.NewBuilder("test", manual.WithInitialState(state(true)))
	ch, err := conn.New("test:///drain", conn.WithResolver(r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	ch.Connect()

	page := httptest.NewServer(debugpage.New(ch))
	t.Cleanup(page.Close)
	ctx := openPage(t, browser, page.URL)

	row := func(b string) string { return `tr[data-address="` + b + `"]` }
	waitForText(t, ctx, row(kept.Addr())+` [data-role="endpoint-state"]`, "READY")
	waitForText(t, ctx, row(leaving.Addr())+` [data-role="draining"]`, "draining")
	if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row(kept.Addr())))); err != nil || strings.Contains(got, "draining") {
		t.Fatalf("the backend not draining: row %q (%v), want no draining mark", got, err)
	}
	screenshot(t, ctx, "draining")

	if err := r.UpdateState(state(false)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, row(leaving.Addr()), "its row without the draining mark", func(got string) bool {
		return strings.Contains(got, "READY") && !strings.Contains(got, "draining")
	})
}
