module github.com/lbkit/lbkit/internal/browsertest

go 1.26.0

replace github.com/lbkit/lbkit => ../..

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/lbkit/lbkit v0.0.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
