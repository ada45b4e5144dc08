package conn

import (
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// DefaultEventBuffer is the buffer of a [Subscription] when Subscribe is
// given a size below 1.
const DefaultEventBuffer = 64

// Subscription receives a channel's events ([lb.Event]): its state
// changes, policy switches and priority changes, in the order they happen.
// Create it with [Channel.Subscribe].
//
// The channel never waits for a subscriber: an event that finds the
// buffer of C full is dropped and counted by Dropped, so a subscriber that
// falls behind loses events rather than slowing the channel. C is closed by
// [Subscription.Close] and when the channel closes (after its last event,
// SHUTDOWN). Methods are safe for concurrent use.
type Subscription struct {
	// C delivers the events.
	C <-chan lb.Event

	c       chan lb.Event
	ch      *Channel
	dropped atomic.Uint64
	closed  bool // guarded by ch.subs.mu
}

// subscribers is the channel's set of subscriptions.
type subscribers struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscribe returns a subscription whose buffer holds buffer events
// ([DefaultEventBuffer] when buffer < 1). Events before the call are not
// delivered. On a closed channel, C is closed at once.
func (c *Channel) Subscribe(buffer int) *Subscription {
	if buffer < 1 {
		buffer = DefaultEventBuffer
	}
	s := &Subscription{c: make(chan lb.Event, buffer), ch: c}
	s.C = s.c
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	if c.subs.subs == nil {
		c.subs.subs = make(map[*Subscription]struct{})
	}
	if c.shut.Load() && c.State() == lb.Shutdown {
		s.closed = true
		close(s.c)
		return s
	}
	c.subs.subs[s] = struct{}{}
	return s
}

// Dropped returns how many events did not fit in the buffer.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes C. Later calls do nothing.
func (s *Subscription) Close() {
	s.ch.subs.mu.Lock()
	defer s.ch.subs.mu.Unlock()
	s.closeLocked()
}

func (s *Subscription) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.ch.subs.subs, s)
	close(s.c)
}

// emit stamps e with the channel's time and offers it to every subscriber
// without waiting. Runs serialized.
func (c *Channel) emit(e lb.Event) {
	e.Time = c.clock.Now()
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	for s := range c.subs.subs {
		select {
		case s.c <- e:
		default:
			s.dropped.Add(1)
		}
	}
}

// closeSubscriptions closes every subscription; the channel has closed.
func (c *Channel) closeSubscriptions() {
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	for s := range c.subs.subs {
		s.closeLocked()
	}
}
