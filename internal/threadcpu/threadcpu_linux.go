package threadcpu

import (
	"syscall"
	"unsafe"
)

// Now returns the CPU time the calling thread has used, in ns, from
// clock_gettime(CLOCK_THREAD_CPUTIME_ID), which is exact (getrusage's
// per-thread figure is only brought up to date at the scheduler's ticks).
// Callers lock their goroutine to its thread (runtime.LockOSThread)
// between two readings. It panics if the clock cannot be read. Safe for
// concurrent use.
func Now() int64 {
	const clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID on Linux
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}
