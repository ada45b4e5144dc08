// Package xds follows an xDS management server over ADS and registers the
// "xds" resolver scheme: "xds:///CLUSTER" resolves a cluster from its CDS
// and EDS resources into the same priority_experimental →
// weighted_target_experimental → endpoint-policy tree as the eds file
// resolver.
package xds
