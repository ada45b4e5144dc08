//go:build !unix

package cputime

import "time"

// process returns 0: no process CPU clock is read on this platform.
func process() time.Duration { return 0 }
