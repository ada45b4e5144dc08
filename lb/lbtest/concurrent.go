package lbtest

import (
	"context"
	"sync"

	"github.com/lbkit/lbkit/lb"
)

// PickConcurrently runs during on the calling goroutine while goroutines
// other goroutines pick, over and over, from whatever picker cc last
// received, as a channel's callers do while its policy changes. Each
// successful pick is passed to check, from the picking goroutine, which also
// calls the pick's Done (if any) right after check. Failed picks are
// skipped. PickConcurrently returns when during has returned and every
// picking goroutine has stopped, with the first error check returned, or
// nil. The race detector, with -race, checks the pickers' side of the
// concurrency contract.
func PickConcurrently(cc *ClientConn, goroutines int, check func(lb.PickResult) error, during func()) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	stop := make(chan struct{})
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := lb.PickInfo{Ctx: context.Background()}
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, ok := cc.LastState()
				if !ok {
					continue
				}
				r, err := s.Picker.Pick(info)
				if err != nil {
					continue
				}
				if err := check(r); err != nil {
					once.Do(func() { first = err })
					return
				}
				if r.Done != nil {
					r.Done(lb.DoneInfo{})
				}
			}
		}()
	}
	during()
	close(stop)
	wg.Wait()
	return first
}
