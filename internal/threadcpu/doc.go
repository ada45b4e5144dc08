// Package threadcpu reads the CPU time of the calling thread, for
// benchmarks that must not count the time a loaded machine takes the core
// away from them (lb/edf's and lb/peakewma's *CPU benchmarks). It is Linux
// only; on other systems the package is empty, as the benchmarks that use
// it are. It imports nothing of lbkit.
package threadcpu
