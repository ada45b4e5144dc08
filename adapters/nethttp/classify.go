package nethttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Classifier decides whether a request failed, for the load-balancing
// policy: it returns nil for a success and the error to report
// (lb.DoneInfo.Err) for a failure. resp is the response, or nil when
// none was received; err is the round trip's error, or the error reading
// the response body, or nil. A Classifier is called once per request, from
// the goroutine that finishes it, and must be safe for concurrent use.
type Classifier func(resp *http.Response, err error) error

// DefaultClassifier is the rule a [Transport] uses when its Classify field
// is nil: a request fails when err is not nil (the backend could not be
// reached, or the body could not be read), or when the response status is
// 5xx, reported as a [*StatusError]. Every other response, 4xx included,
// is a success: the backend answered. So is a request the caller cancelled
// (err matching context.Canceled): giving up is not the backend's fault. A
// deadline that expired (context.DeadlineExceeded) is a failure: the
// backend did not answer in time.
func DefaultClassifier(resp *http.Response, err error) error {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	if resp != nil && resp.StatusCode >= 500 {
		return &StatusError{StatusCode: resp.StatusCode}
	}
	return nil
}

// StatusError is the failure [DefaultClassifier] reports for a response
// whose status counts as failed. Match it with errors.As.
type StatusError struct {
	// StatusCode is the response's HTTP status code.
	StatusCode int
}

// Error returns "nethttp: backend answered 503 Service Unavailable".
func (e *StatusError) Error() string {
	return fmt.Sprintf("nethttp: backend answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}
