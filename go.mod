module github.com/lbkit/lbkit

go 1.24

require github.com/benbjohnson/clock v1.3.5
