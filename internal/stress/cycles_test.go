package stress

import (
	"context"
	"testing"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// Channels created and closed in a loop, against a real listener with the
// real TCPDialer, half closed while dialing and half once READY, leave no
// goroutine (TestMain's goleak) and no file descriptor behind.
func TestNewCloseCycles(t *testing.T) {
	backend := startTCPBackend(t)
	baseline := openFDs(t)
	cycles := count(300, 5000)
	for i := range cycles {
		ch, err := conn.New("static:///"+backend.addr, conn.WithRandSeed(uint64(i), 2))
		if err != nil {
			t.Fatal(err)
		}
		ch.Connect()
		if i%2 == 0 {
			waitReady(t, ch)
		}
		ch.Close()
	}
	t.Logf("%d New/Close cycles", cycles)
	waitFDs(t, baseline)
}

func waitReady(t *testing.T, ch *conn.Channel) {
	t.Helper()
	ctx, cancel := context.WithCancel(guard(t))
	defer cancel()
	for s := ch.State(); s != lb.Ready; s = ch.State() {
		if !ch.WaitForStateChange(ctx, s) {
			t.Fatalf("channel state %v, want READY", s)
		}
	}
}
