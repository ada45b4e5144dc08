package conn

import "sync"

// ownedConn is a Conn a dialer returned, owned by the channel until it is
// closed. Its pointer identifies it whatever the Conn's own type.
type ownedConn struct {
	Conn
	once sync.Once
}

// connSet holds every Conn a dialer returned that is not yet closed, so
// that Close can close the ones whose hand-over to the serializer it
// dropped: a dial that completes while the channel closes queues its
// result on a serializer that Close then discards.
//
// Its methods are safe from any goroutine.
type connSet struct {
	mu     sync.Mutex
	closed bool
	live   map[*ownedConn]struct{}
}

// adopt records conn as the channel's. Once the set is closed it closes
// conn at once and returns nil: the caller must drop it.
func (s *connSet) adopt(conn Conn) *ownedConn {
	oc := &ownedConn{Conn: conn}
	s.mu.Lock()
	if !s.closed {
		if s.live == nil {
			s.live = make(map[*ownedConn]struct{})
		}
		s.live[oc] = struct{}{}
		s.mu.Unlock()
		return oc
	}
	s.mu.Unlock()
	s.release(oc)
	return nil
}

// release closes oc, once, and forgets it.
func (s *connSet) release(oc *ownedConn) {
	s.mu.Lock()
	delete(s.live, oc)
	s.mu.Unlock()
	oc.once.Do(func() { _ = oc.Conn.Close() })
}

// closeAll closes every Conn still held; adopt closes any later one
// itself. It returns how many it closed.
func (s *connSet) closeAll() int {
	s.mu.Lock()
	s.closed = true
	live := s.live
	s.live = nil
	s.mu.Unlock()
	for oc := range live {
		oc.once.Do(func() { _ = oc.Conn.Close() })
	}
	return len(live)
}
