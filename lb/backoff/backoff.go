// Package backoff computes exponential backoff delays as gRPC's
// connection-backoff document describes
// (https://github.com/grpc/grpc/blob/master/doc/connection-backoff.md). The
// channel (package conn) uses it between connection attempts and
// re-resolutions, the dns resolver between failed lookups.
//
// # Concurrency
//
// A [Config] is an immutable value. [Config.Delay] draws from the
// *rand.Rand it is given, which the caller must not share between
// goroutines.
package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Config is an exponential backoff schedule.
type Config struct {
	// BaseDelay is the delay after the first failure (INITIAL_BACKOFF).
	BaseDelay time.Duration
	// Multiplier grows the delay after each further failure; at least 1.
	Multiplier float64
	// Jitter spreads each delay uniformly over ±Jitter of itself; 0 to 1.
	Jitter float64
	// MaxDelay caps the delay before jitter (MAX_BACKOFF); at least
	// BaseDelay.
	MaxDelay time.Duration
}

// Default returns gRPC's schedule: 1 s, ×1.6, jitter 0.2, at most 120 s.
func Default() Config {
	return Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 120 * time.Second}
}

// ChannelDefault returns the default schedule of lbkit's channel (package
// conn) and of the simulator's clients: gRPC's, with the cap lowered to
// 10 s, the default health-check interval: 1 s, ×1.6, jitter 0.2, at most
// 10 s. A backend that comes back is then dialled again within 12 s
// without health checks (docs/choices.md, "The backoff and probe model").
func ChannelDefault() Config {
	c := Default()
	c.MaxDelay = 10 * time.Second
	return c
}

// Delay returns the delay after retries earlier failures in a row (0 for the
// first): min(BaseDelay·Multiplier^retries, MaxDelay), spread by ±Jitter
// with r. A nil r means no jitter.
func (c Config) Delay(retries int, r *rand.Rand) time.Duration {
	d := float64(c.BaseDelay) * math.Pow(c.Multiplier, float64(retries))
	d = math.Min(d, float64(c.MaxDelay))
	if r != nil && c.Jitter > 0 {
		d *= 1 + c.Jitter*(2*r.Float64()-1)
	}
	return time.Duration(d)
}

// Validate returns an error naming every field out of range, each prefixed
// with prefix (such as "WithBackoff"), or nil.
func (c Config) Validate(prefix string) error {
	var errs []error
	if c.BaseDelay <= 0 {
		errs = append(errs, fmt.Errorf("%s.BaseDelay: must be positive, got %v", prefix, c.BaseDelay))
	}
	if c.Multiplier < 1 || math.IsNaN(c.Multiplier) || math.IsInf(c.Multiplier, 0) {
		errs = append(errs, fmt.Errorf("%s.Multiplier: must be a finite number >= 1, got %v", prefix, c.Multiplier))
	}
	if !(c.Jitter >= 0 && c.Jitter <= 1) {
		errs = append(errs, fmt.Errorf("%s.Jitter: must be in [0, 1], got %v", prefix, c.Jitter))
	}
	if c.MaxDelay < c.BaseDelay {
		errs = append(errs, fmt.Errorf("%s.MaxDelay: must be >= BaseDelay (%v), got %v", prefix, c.BaseDelay, c.MaxDelay))
	}
	return errors.Join(errs...)
}
