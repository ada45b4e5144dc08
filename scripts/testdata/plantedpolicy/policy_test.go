package plantedpolicy

import (
	"testing"
	"time"
)

// Tests are not library code: scripts/clockcheck.sh checks that this
// sleep is not reported.
func TestSleepIsAllowedInTests(t *testing.T) {
	time.Sleep(time.Nanosecond)
}
