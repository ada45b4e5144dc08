package xds

// DecodeEndpoints exposes the EDS decoder to the package's benchmarks.
var DecodeEndpoints = decodeEndpoints
