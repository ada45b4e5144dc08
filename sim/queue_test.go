package sim

import (
	"flag"
	"fmt"
	"math"
	"testing"
)

var long = flag.Bool("long", false, "run the long validations (make sim): every utilisation with millions of samples")

// erlangC returns the probability that an arrival waits in M/M/c with
// offered load a = lambda/mu.
func erlangC(c int, a float64) float64 {
	term, sum := 1.0, 1.0 // a^k/k! for k = 0
	for k := 1; k < c; k++ {
		term *= a / float64(k)
		sum += term
	}
	top := term * a / float64(c) / (1 - a/float64(c))
	return top / (sum + top)
}

// sojourn returns the mean and the 99th percentile of the sojourn time in
// M/M/c: T = S + W, S ~ Exp(mu), W = 0 with probability 1-Pw, else
// Exp(theta), theta = c·mu - lambda. For c = 1 it is Exp(mu - lambda).
func sojourn(c int, lambda, mu float64) (mean, p99 float64) {
	pw := erlangC(c, lambda/mu)
	theta := float64(c)*mu - lambda
	mean = pw/theta + 1/mu
	tail := func(t float64) float64 {
		if math.Abs(theta-mu) < 1e-12 {
			return math.Exp(-mu*t) * (1 + pw*mu*t)
		}
		return (1-pw)*math.Exp(-mu*t) + pw*(theta*math.Exp(-mu*t)-mu*math.Exp(-theta*t))/(theta-mu)
	}
	lo, hi := 0.0, 1.0
	for tail(hi) > 0.01 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tail(mid) > 0.01 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return mean, (lo + hi) / 2
}

// samplesFor returns four times as many requests as make three standard
// errors of the mean sojourn time 2% in M/M/1 at utilisation rho (the
// p99's estimate varies more than the mean's), from Whitt's
// asymptotic variance of the mean waiting time, rho(2+5rho-4rho²+rho³)/
// (1-rho)^4 (in service times squared; W. Whitt, "Planning queueing
// simulations", Management Science 35(11), 1989).
func samplesFor(rho float64) int {
	v := rho * (2 + 5*rho - 4*rho*rho + rho*rho*rho) / math.Pow(1-rho, 4)
	meanT := 1 / (1 - rho)
	se := 0.02 / 3 * meanT
	return 4 * (int(v/(se*se)) + 1)
}

// queueScenario is c servers behind one FIFO queue (one backend of
// concurrency c) with exponential service of mean 1 ms, fed by Poisson
// arrivals at utilisation rho, for about n requests of which the first 5%
// are warm-up.
func queueScenario(c int, rho float64, n int) string {
	const meanMs = 1.0
	lambda := rho * float64(c) * 1000 / meanMs
	secs := float64(n) / lambda
	return fmt.Sprintf(`{"name": "mmc", "seed": 7, "duration": "%.3fs", "warmup": "%.3fs",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": %g}],
		"backends": [{"name": "s", "concurrency": %d, "service": {"exponential": {"mean": "0.001s"}}}]}`,
		secs*1.05, secs*0.05, lambda, c)
}

func TestQueueingTheory(t *testing.T) {
	type tc struct {
		c   int
		rho float64
	}
	cases := []tc{{1, 0.5}, {4, 0.5}}
	if *long {
		cases = nil
		for _, c := range []int{1, 4} {
			for _, rho := range []float64{0.5, 0.6, 0.7, 0.8, 0.9} {
				cases = append(cases, tc{c, rho})
			}
		}
	}
	for _, k := range cases {
		t.Run(fmt.Sprintf("M/M/%d/rho=%.1f", k.c, k.rho), func(t *testing.T) {
			n := samplesFor(k.rho)
			s, err := ParseScenario([]byte(queueScenario(k.c, k.rho, n)))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(s)
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Policies[0]
			mu := 1000.0
			wantMean, wantP99 := sojourn(k.c, k.rho*float64(k.c)*mu, mu)
			gotMean, gotP99 := res.Latency.Mean/1000, res.Latency.P99/1000
			t.Logf("%d samples: mean %.4f ms (theory %.4f), p99 %.4f ms (theory %.4f)",
				res.Requests, gotMean*1000, wantMean*1000, gotP99*1000, wantP99*1000)
			if res.Succeeded != res.Requests {
				t.Errorf("%d of %d requests succeeded", res.Succeeded, res.Requests)
			}
			if rel := math.Abs(gotMean-wantMean) / wantMean; rel > 0.02 {
				t.Errorf("mean sojourn %.4f s, theory %.4f s: off by %.2f%% (> 2%%)", gotMean, wantMean, 100*rel)
			}
			if rel := math.Abs(gotP99-wantP99) / wantP99; rel > 0.02 {
				t.Errorf("p99 sojourn %.4f s, theory %.4f s: off by %.2f%% (> 2%%)", gotP99, wantP99, 100*rel)
			}
		})
	}
}

func TestErlangCAndSojournClosedForms(t *testing.T) {
	// M/M/1: Pw = rho, T ~ Exp(mu - lambda).
	mean, p99 := sojourn(1, 80, 100)
	if math.Abs(mean-1.0/20) > 1e-9 || math.Abs(p99-math.Log(100)/20) > 1e-9 {
		t.Errorf("M/M/1: mean %v p99 %v, want %v %v", mean, p99, 1.0/20, math.Log(100)/20)
	}
	// Erlang C for c = 2, a = 1: 1/3.
	if got := erlangC(2, 1); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("ErlangC(2, 1) = %v, want 1/3", got)
	}
}
