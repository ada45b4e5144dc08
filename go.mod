module github.com/lbkit/lbkit

go 1.24

require (
	github.com/benbjohnson/clock v1.3.5
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require github.com/cespare/xxhash/v2 v2.3.0
