package lb_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
)

// Every pick of an IDLE picker queues; however many goroutines pick, exitIdle
// is scheduled once.
func TestIdlePickerExitsIdleOnce(t *testing.T) {
	s := lb.NewSerializer(clock.NewMock())
	defer s.Close()
	var exits atomic.Int32
	p := lb.NewIdlePicker(s, func() { exits.Add(1) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := p.Pick(lb.PickInfo{}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
					t.Errorf("Pick = %v, want ErrNoSubConnAvailable", err)
				}
			}
		}()
	}
	wg.Wait()
	if err := s.WaitIdle(guard(t), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n := exits.Load(); n != 1 {
		t.Fatalf("exitIdle ran %d times, want 1", n)
	}
}
