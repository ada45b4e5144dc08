package stress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// TestSlowStartOnTheRealClock runs slow start (issue 27) on the real clock
// under the race detector, as every timer tested on a mock clock should
// be once: four real HTTP backends under round_robin with a 6 s window;
// a fifth joins, and its share of requests is measured early in its ramp
// and after the window. Early it must be well below a fifth (A100's factor
// is max(t, 1 s)/window, a sixth, in the first second: about 4% of picks),
// after the window about a fifth; and the channel closes with no ticking timer left (goleak, in
// TestMain). The shares move with the machine's load, so only the
// ordering and wide bounds are checked; it runs under -long (make stress).
func TestSlowStartOnTheRealClock(t *testing.T) {
	if !*long {
		t.Skip("timing-dependent: runs under -long (make stress)")
	}
	var addrs []resolver.Address
	names := map[string]string{}
	for i := range 5 {
		name := fmt.Sprintf("b%d", i)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }))
		t.Cleanup(s.Close)
		host := strings.TrimPrefix(s.URL, "http://")
		names[host] = name
		addrs = append(addrs, resolver.Address{Addr: host})
	}
	r := manual.NewBuilder("slowstart", manual.WithInitialState(resolver.State{Addresses: addrs[:4]}))
	ch, err := conn.New("slowstart:///svc", conn.WithResolver(r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{"slowStartConfig":{"slowStartWindow":"6s"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	share := func(d time.Duration) float64 {
		n, newest := 0, 0
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			resp, err := client.Get("http://svc/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(body) == "b4" {
				newest++
			}
		}
		return float64(newest) / float64(n)
	}
	share(300 * time.Millisecond) // the first four are READY and ramped
	time.Sleep(6200 * time.Millisecond)
	if err := r.UpdateState(resolver.State{Addresses: addrs}); err != nil {
		t.Fatal(err)
	}
	early := share(400 * time.Millisecond)
	time.Sleep(6 * time.Second)
	late := share(400 * time.Millisecond)
	t.Logf("the new backend's share: %.3f early in its ramp, %.3f after the window", early, late)
	if !(early < 0.1 && late > 0.15 && late > 2*early) {
		t.Errorf("share %.3f early, %.3f late; want early under 0.1, late over 0.15 and over twice early", early, late)
	}
}
