package conn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff as in gRPC's connection-backoff
// document (https://github.com/grpc/grpc/blob/master/doc/connection-backoff.md).
type Backoff struct {
	// BaseDelay is the delay after the first failure (INITIAL_BACKOFF).
	BaseDelay time.Duration
	// Multiplier grows the delay after each further failure.
	Multiplier float64
	// Jitter spreads each delay uniformly over ±Jitter of itself.
	Jitter float64
	// MaxDelay caps the delay before jitter (MAX_BACKOFF).
	MaxDelay time.Duration
}

// DefaultBackoff is gRPC's: 1 s, ×1.6, jitter 0.2, at most 120 s.
func DefaultBackoff() Backoff {
	return Backoff{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 120 * time.Second}
}

// Delay returns the delay after retries earlier failures in a row (0 for the
// first): min(BaseDelay·Multiplier^retries, MaxDelay), spread by ±Jitter
// with r. r nil means no jitter.
func (b Backoff) Delay(retries int, r *rand.Rand) time.Duration {
	d := float64(b.BaseDelay) * math.Pow(b.Multiplier, float64(retries))
	d = math.Min(d, float64(b.MaxDelay))
	if r != nil && b.Jitter > 0 {
		d *= 1 + b.Jitter*(2*r.Float64()-1)
	}
	return time.Duration(d)
}

// validate checks the fields, naming the first bad one.
func (b Backoff) validate(prefix string) error {
	var errs []error
	if b.BaseDelay <= 0 {
		errs = append(errs, fmt.Errorf("%s.BaseDelay: must be positive, got %v", prefix, b.BaseDelay))
	}
	if b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0) {
		errs = append(errs, fmt.Errorf("%s.Multiplier: must be a finite number >= 1, got %v", prefix, b.Multiplier))
	}
	if !(b.Jitter >= 0 && b.Jitter <= 1) {
		errs = append(errs, fmt.Errorf("%s.Jitter: must be in [0, 1], got %v", prefix, b.Jitter))
	}
	if b.MaxDelay < b.BaseDelay {
		errs = append(errs, fmt.Errorf("%s.MaxDelay: must be >= BaseDelay (%v), got %v", prefix, b.BaseDelay, b.MaxDelay))
	}
	return errors.Join(errs...)
}
