// Package stress holds lbkit's fault and load tests: real backends killed
// and restarted under concurrent picks, policies and addresses changing
// every millisecond, an EDS file rewritten, truncated, deleted and replaced
// by a directory or a FIFO. Each test counts what a user would: failed
// picks while an endpoint is READY, picks of removed backends, requests
// that hang, and goroutines and file descriptors left behind.
//
// `make test` runs each for a couple of seconds; `make stress` runs them
// long (go test ./internal/stress -args -long). The figures they log are
// in docs/testing.md.
package stress
