package nethttp_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/lbkit/lbkit/adapters/nethttp"
)

// A Transport whose policy counts 429 Too Many Requests as a failure, on top
// of the default rule (connection errors and 5xx). The caller still receives
// every response unchanged; only what the load-balancing policy hears (for
// example outlier_detection's success counts) changes.
func ExampleClassifier() {
	errThrottled := errors.New("backend is throttling")
	classify := func(resp *http.Response, err error) error {
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			return errThrottled
		}
		return nethttp.DefaultClassifier(resp, err)
	}
	tr := &nethttp.Transport{ /* Channel: ch, */ Classify: classify}

	for _, code := range []int{200, 404, 429, 503} {
		err := tr.Classify(&http.Response{StatusCode: code}, nil)
		var se *nethttp.StatusError
		switch {
		case err == nil:
			fmt.Println(code, "success")
		case errors.As(err, &se):
			fmt.Println(code, "failure:", se)
		default:
			fmt.Println(code, "failure:", err)
		}
	}
	// Output:
	// 200 success
	// 404 success
	// 429 failure: backend is throttling
	// 503 failure: nethttp: backend answered 503 Service Unavailable
}
