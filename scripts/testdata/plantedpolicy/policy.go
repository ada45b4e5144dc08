// Package plantedpolicy is a policy that breaks the injected-clock rule on
// purpose: scripts/clockcheck.sh must find every call below, and fails
// make lint when it does not.
package plantedpolicy

import (
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
)

type balancer struct {
	cc   lb.ClientConn
	last time.Time
}

func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	b.last = time.Now()
	if rand.IntN(2) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.AfterFunc(time.Second, func() {})
	time.NewTimer(time.Second).Stop()
	return nil
}

func (b *balancer) ResolverError(error) {}
func (b *balancer) ExitIdle()           {}
func (b *balancer) Close()              {}

var _ lb.Balancer = (*balancer)(nil)
