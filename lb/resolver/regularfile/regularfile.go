// Package regularfile reads files that a process is told to read by
// configuration (an EDS assignment, an xDS bootstrap) without letting the
// file block or exhaust it: only a regular file is read, opened without
// blocking (so a FIFO cannot hold the open until a writer comes), and only
// up to a size limit checked before and while reading.
package regularfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error for a name that is not a regular
// file: a FIFO, a device, a directory or a socket could block a read
// without end or never end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file over the limit.
var ErrTooLarge = errors.New("file too large")

// Read returns the content of name if it is a regular file of at most
// limit bytes; a file that grows past limit while it is read is refused
// too. Errors name the file and wrap [ErrNotRegular], [ErrTooLarge] or the
// operating system's error. Read is safe for concurrent use.
func Read(name string, limit int64) ([]byte, error) {
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
		return nil, fmt.Errorf("%s: %w (it is %s)", name, ErrNotRegular, kind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, TooLarge(name, info.Size(), limit)
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, TooLarge(name, int64(buf.Len()), limit)
	}
	return buf.Bytes(), nil
}

// TooLarge returns the error for content of name of size bytes (or more)
// over limit, wrapping [ErrTooLarge]: for callers that get content some
// other way and hold it to the same limit.
func TooLarge(name string, size, limit int64) error {
	return fmt.Errorf("%s: %w: %d bytes or more, over the limit of %d bytes", name, ErrTooLarge, size, limit)
}

// kind names what a non-regular file is, for error messages.
func kind(m fs.FileMode) string {
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
