package roundrobin

// Config is round_robin's configuration as a Go value, the JSON object {}:
// the policy takes no config (any object is accepted and ignored, as gRPC
// does), so Config has no field. It is an [lb.PolicyConfig], the typed
// form of {"round_robin": {}}.
type Config struct{}
