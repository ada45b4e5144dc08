package hist

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsCoverEveryValueOnce(t *testing.T) {
	for i := 0; i < buckets-1; i++ {
		lo, hi := bounds(i)
		nlo, _ := bounds(i + 1)
		if hi+1 != nlo {
			t.Fatalf("bucket %d ends at %d, bucket %d starts at %d", i, hi, i+1, nlo)
		}
		if index(lo) != i || index(hi) != i {
			t.Fatalf("bucket %d [%d,%d]: index(lo)=%d index(hi)=%d", i, lo, hi, index(lo), index(hi))
		}
	}
	if _, hi := bounds(buckets - 1); hi != 1<<64-1 {
		t.Fatalf("last bucket ends at %d, want 2^64-1", hi)
	}
}

func TestQuantilesWithinRelativeError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]time.Duration, 100_000)
	for i := range vals {
		vals[i] = time.Duration(r.ExpFloat64() * float64(50*time.Millisecond))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		rank := int(float64(len(vals))*q+0.999999) - 1
		want := vals[max(rank, 0)]
		got := h.Quantile(q)
		if rel := float64(got-want) / float64(want); rel > 0.004 || rel < -0.004 {
			t.Errorf("q%v = %v, exact %v (relative error %.4f > 0.4%%)", q, got, want, rel)
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
		t.Errorf("min/max %v/%v, want %v/%v", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
}

func TestMergeAndFraction(t *testing.T) {
	var a, b Histogram
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(i+100) * time.Millisecond)
	}
	a.Merge(&b)
	if a.Count() != 200 || a.Min() != time.Millisecond || a.Max() != 200*time.Millisecond {
		t.Fatalf("merged: n=%d min=%v max=%v", a.Count(), a.Min(), a.Max())
	}
	if f := a.FractionAtOrBelow(100 * time.Millisecond); f < 0.495 || f > 0.505 {
		t.Errorf("fraction at or below 100ms = %v, want 0.5", f)
	}
	if m := a.Mean(); m != 100500*time.Microsecond {
		t.Errorf("mean %v, want 100.5ms", m)
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 {
		t.Errorf("reset histogram not empty")
	}
}
