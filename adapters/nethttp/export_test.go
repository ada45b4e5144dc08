package nethttp

// PoolOf returns, for the tests of package nethttp_test, the connection
// pool t holds for the backend address addr (nil if it holds none) and
// whether that pool has been dropped: it tells the sweep's decisions from
// net/http's own connection closes, which a test cannot rule out.
func PoolOf(t *Transport, addr string) (pool any, dropped bool) {
	v, ok := t.backends.Load(addr)
	if !ok {
		return nil, false
	}
	b := v.(*backend)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b, b.dropped || b.users.isRetired()
}
