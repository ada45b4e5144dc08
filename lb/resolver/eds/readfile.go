package eds

import (
	"errors"
	"fmt"

	"github.com/lbkit/lbkit/lb/resolver/regularfile"
)

// DefaultMaxFileSize is the largest file a resolver reads without
// [WithMaxFileSize]: 128 MiB, about a million endpoints.
const DefaultMaxFileSize = 128 << 20

// ErrNotRegularFile is wrapped by the error reported when the target names
// something other than a regular file (a FIFO, a device, a directory, a
// socket): such a file could block a read without end or never end.
var ErrNotRegularFile = regularfile.ErrNotRegular

// ErrFileTooLarge is wrapped by the error reported when the file is larger
// than the limit set with [WithMaxFileSize].
var ErrFileTooLarge = regularfile.ErrTooLarge

// readRegularFile reads name if it is a regular file of at most limit
// bytes ([regularfile.Read]), saying in errors what the resolver accepts
// and how the limit is set.
func readRegularFile(name string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(name, limit)
	return data, withHint(err)
}

// tooLarge is the error for content over the limit that a ReadFileFunc
// returned.
func tooLarge(name string, size, limit int64) error {
	return withHint(regularfile.TooLarge(name, size, limit))
}

// withHint adds to a refusal what the eds resolver reads and how to change
// the limit.
func withHint(err error) error {
	switch {
	case errors.Is(err, regularfile.ErrNotRegular):
		return fmt.Errorf("%w; the eds resolver reads regular files only", err)
	case errors.Is(err, regularfile.ErrTooLarge):
		return fmt.Errorf("%w (set with eds.WithMaxFileSize)", err)
	}
	return err
}
