package backoff

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Property (gRPC connection-backoff): each delay lies within
// [0.8, 1.2] × min(1s·1.6^k, 120s), and the same seed gives the same
// sequence.
func TestPropertyBackoffFollowsTheSpec(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		b := Default()
		r1 := rand.New(rand.NewPCG(seed, 1))
		r2 := rand.New(rand.NewPCG(seed, 1))
		for k := range rapid.IntRange(1, 40).Draw(t, "retries") {
			base := math.Min(float64(time.Second)*math.Pow(1.6, float64(k)), float64(120*time.Second))
			d := b.Delay(k, r1)
			if float64(d) < 0.8*base-1 || float64(d) > 1.2*base+1 {
				t.Fatalf("delay %d = %v, want within [%v, %v]", k, d, time.Duration(0.8*base), time.Duration(1.2*base))
			}
			if d2 := b.Delay(k, r2); d2 != d {
				t.Fatalf("same seed, delay %d: %v then %v", k, d, d2)
			}
		}
	})
}

func TestBackoffWithoutJitter(t *testing.T) {
	b := Default()
	for k, want := range []time.Duration{time.Second, 1600 * time.Millisecond, 2560 * time.Millisecond} {
		if got := b.Delay(k, nil); got != want {
			t.Errorf("Delay(%d) = %v, want %v", k, got, want)
		}
	}
	if got := b.Delay(100, nil); got != 120*time.Second {
		t.Errorf("Delay(100) = %v, want the 120s cap", got)
	}
}

func TestBackoffValidation(t *testing.T) {
	bad := Config{BaseDelay: 0, Multiplier: 0.5, Jitter: 2, MaxDelay: -1}
	err := bad.Validate("WithBackoff")
	if err == nil {
		t.Fatal("invalid backoff accepted")
	}
	for _, field := range []string{"BaseDelay", "Multiplier", "Jitter", "MaxDelay"} {
		if !strings.Contains(err.Error(), "WithBackoff."+field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	if err := Default().Validate("x"); err != nil {
		t.Errorf("default backoff rejected: %v", err)
	}
}

// The channel's default is gRPC's schedule with a 10 s cap: the first five
// delays are gRPC's, the sixth is capped.
func TestChannelDefault(t *testing.T) {
	c, g := ChannelDefault(), Default()
	if err := c.Validate("ChannelDefault"); err != nil {
		t.Fatal(err)
	}
	for k := range 5 {
		if c.Delay(k, nil) != g.Delay(k, nil) {
			t.Errorf("Delay(%d) = %v, gRPC's %v", k, c.Delay(k, nil), g.Delay(k, nil))
		}
	}
	if got := c.Delay(5, nil); got != 10*time.Second {
		t.Errorf("Delay(5) = %v, want the 10s cap", got)
	}
}
