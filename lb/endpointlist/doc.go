// Package endpointlist is the shared base of lbkit's leaf policies that keep
// one SubConn per endpoint and spread requests over the READY ones
// (weighted_round_robin, round_robin, least_request_experimental,
// peak_ewma_experimental). A [List] does everything but choose the SubConn
// for a request:
//
//   - one SubConn per endpoint ([Key]: the address without its weight, hash
//     key and draining mark), created and asked to connect when the
//     endpoint first appears, shut down when it leaves the updates, and
//     reconnected at once whenever it reports IDLE;
//   - the policy's state: the aggregate ([lb.StateCounter]) of the
//     SubConns' counted states, where IDLE counts as CONNECTING and
//     TRANSIENT_FAILURE is sticky until READY, as gRFC A61 and A48 ask of
//     round_robin and its kin;
//   - a new picker for every update, and for every SubConn report that
//     changes what a picker shows: the aggregate state, the READY set while
//     READY (rebuilds queued in one burst coalesce into one), or the
//     connection error while TRANSIENT_FAILURE;
//   - draining endpoints (package draining) left out of the READY set the
//     policy's picker is built over while another READY endpoint is not
//     draining, so every policy built on a List drains the same way;
//   - TRANSIENT_FAILURE pickers naming the last connection error and the
//     resolver error, CONNECTING pickers that queue, and the empty-list and
//     resolver-error rules;
//   - slow start (package slowstart): each endpoint's ramp starts when the
//     list counts it READY, the config comes with each update
//     ([ConfigOf]), and the list re-publishes its READY picker at each of
//     the tracker's ticks; the policy reads the factors from
//     [List.SlowStart] when it builds a picker.
//
// The policy supplies the READY picker ([Policy.BuildPicker]) and may keep
// per-endpoint data in [Endpoint.Data], which lives as long as the endpoint,
// across pickers.
//
// A policy's builder is [Builder], over the policy's name, config reader
// and Build ([Leaf]); [NewCounted] starts the Build of a policy that counts
// its ramping endpoints under its own name.
//
// # Concurrency contract
//
// A List is used only inside its tree's serializer, like any balancer; it
// takes no lock. Pickers may read [Endpoint.SubConn] and whatever
// concurrency-safe state the policy keeps in [Endpoint.Data].
package endpointlist
