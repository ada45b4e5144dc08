package eds

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DefaultMaxFileSize is the largest file a resolver reads without
// [WithMaxFileSize]: 128 MiB, about a million endpoints.
const DefaultMaxFileSize = 128 << 20

// ErrNotRegularFile is wrapped by the error reported when the target names
// something other than a regular file (a FIFO, a device, a directory, a
// socket): such a file could block a read without end or never end.
var ErrNotRegularFile = errors.New("not a regular file")

// ErrFileTooLarge is wrapped by the error reported when the file is larger
// than the limit set with [WithMaxFileSize].
var ErrFileTooLarge = errors.New("file too large")

// readRegularFile reads name if it is a regular file of at most limit
// bytes. The file is opened without blocking (a FIFO would otherwise block
// the open until a writer came) and checked before a byte is read; a file
// that grows past limit while it is read is refused too.
func readRegularFile(name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (it is %s); the eds resolver reads regular files only", name, ErrNotRegularFile, fileKind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, tooLarge(name, info.Size(), limit)
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(name, int64(buf.Len()), limit)
	}
	return buf.Bytes(), nil
}

func tooLarge(name string, size, limit int64) error {
	return fmt.Errorf("%s: %w: %d bytes or more, over the limit of %d bytes (set with eds.WithMaxFileSize)", name, ErrFileTooLarge, size, limit)
}

// fileKind names what a non-regular file is, for error messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "irregular (mode " + m.String() + ")"
	}
}
