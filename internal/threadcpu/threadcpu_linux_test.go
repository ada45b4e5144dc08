package threadcpu

import (
	"runtime"
	"testing"
)

// TestNowAdvancesWithWork: the thread's CPU time grows while it computes.
func TestNowAdvancesWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := Now()
	x := uint64(1)
	for i := range 1 << 22 {
		x = x*6364136223846793005 + uint64(i)
	}
	if after := Now(); after <= before || x == 0 {
		t.Fatalf("thread CPU time %d then %d, want it to grow", before, after)
	}
}
