// Package childmanager keeps the named children of a multi-child
// load-balancing policy: the part that gRFC A56's priority_experimental and
// A28's weighted_target_experimental share. The owner policy decides which
// children exist and what they are told; the manager builds them, gives each
// its own [lb.ClientConn], remembers what each last published, and retires
// them, at once or on a timer.
//
// # Children
//
// [Manager.Add] creates a named [Child] that runs no policy yet: the child's
// balancer is built lazily, by the first [Child.Update], which builds the
// policy it names and passes it the update. So an owner can attach its own
// per-child state ([Child.Data]) before the child can report anything. A
// later Update naming another policy replaces the balancer: the old one is
// closed (its SubConns shut down) and the new one built.
//
// Each built balancer reports through a ClientConn of its own that
//
//   - passes NewSubConn to the parent's ClientConn unchanged, so SubConn
//     state reaches the child through the listener it gave;
//   - records UpdateState as the child's state ([Child.State]) and calls the
//     owner's [Hooks].StateChanged;
//   - passes ResolveNow to the parent unless [Child.SetIgnoreResolveNow] is
//     set.
//
// Each built balancer also runs on a scope of its own ([lb.Scope], its
// [lb.BuildOptions].Scheduler), made from the child's scope
// ([Child.Scheduler]). The manager closes the balancer's scope before it
// closes a balancer that is replaced or removed, and the child's scope when
// the child is removed: from then on none of that balancer's calls, SubConn
// states, picker hops or timers reach anybody, nor the owner's work
// scheduled for the child. So neither the owner nor the child policy asks
// whether something was closed meanwhile.
//
// # Lifetime
//
// A child is active until [Child.Deactivate] starts its deactivation timer
// (15 minutes unless [WithDeactivationDelay] says otherwise); when the timer
// fires the child is removed. [Child.Reactivate] stops the timer; the child
// keeps its balancer, SubConns and last state. [Child.Remove] removes a
// child at once, [Manager.Close] removes them all. Removal closes the
// child's balancer and then calls [Hooks].Removed, where the owner releases
// what it attached to the child (its own timers, for example).
//
// # Addresses
//
// The manager does not split addresses itself: owners group them with
// [github.com/lbkit/lbkit/lb/hierarchy.Group] and pass each child its group
// in Update, as gRFC A56 ("Hierarchical Addresses") describes.
//
// # Builder
//
// [Builder] is the builder of a parent policy whose builder takes no
// options (weighted_target, outlier_detection, xds_cluster_impl,
// xds_routing): given the policy's name, config reader and balancer
// ([Policy]), it binds the registry the children's policy lists are
// parsed against ([lb.ParentBuilder]) and parses the config
// ([lb.ConfigParser]).
//
// # Concurrency
//
// A Manager and its children belong to one balancer tree: every method, and
// every hook, runs inside the tree's serialized calls (see package lb), so
// nothing here locks. A hook may be called re-entrantly from inside a
// method the owner called, for example StateChanged from inside
// [Child.Update] when a child publishes inline; owners must expect it.
package childmanager
