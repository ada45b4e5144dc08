//go:build unix

package eds_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// buildAt builds a resolver for file with opts and returns it; it is closed
// when the test ends.
func buildAt(t *testing.T, file string, cc *fakeCC, opts ...eds.Option) resolver.Resolver {
	t.Helper()
	b, err := eds.NewBuilder(append([]eds.Option{eds.WithPollInterval(interval)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	target, err := resolver.ParseTarget("eds://"+file, "passthrough")
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Build(target, cc, resolver.BuildOptions{Clock: clock.NewMock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// wantReadError waits for the resolver's first report and checks it is an
// error wrapping want that names what.
func wantReadError(t *testing.T, cc *fakeCC, want error, what string) {
	t.Helper()
	err := cc.NextError(t)
	if !errors.Is(err, want) || !strings.Contains(err.Error(), what) {
		t.Fatalf("reported %v, want an error wrapping %v naming %q", err, want, what)
	}
}

// closeReturns closes r and fails if Close does not return; the guard only
// turns a hang into a failure.
func closeReturns(t *testing.T, r resolver.Resolver) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Close did not return")
	}
}

func TestNonRegularFilesAreRefusedWithoutReading(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cases := []struct{ name, path, kind string }{
		{"FIFO", fifo, "named pipe"},
		{"directory", dir, "directory"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, struct{ name, path, kind string }{"device", "/dev/zero", "character device"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := &fakeCC{}
			r := buildAt(t, tc.path, cc)
			wantReadError(t, cc, eds.ErrNotRegularFile, tc.kind)
			closeReturns(t, r)
		})
	}
}

func TestFileOverTheSizeLimitIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cla.json")
	content := assignment("10.0.0.1", "10.0.0.2")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	limit := int64(len(content) - 1)
	cc := &fakeCC{}
	buildAt(t, file, cc, eds.WithMaxFileSize(limit))
	wantReadError(t, cc, eds.ErrFileTooLarge, "WithMaxFileSize")

	// The limit holds for a custom ReadFileFunc too.
	cc = &fakeCC{}
	buildAt(t, file, cc, eds.WithMaxFileSize(limit), eds.WithReadFile(os.ReadFile))
	wantReadError(t, cc, eds.ErrFileTooLarge, "WithMaxFileSize")

	// At the limit the file is read.
	cc = &fakeCC{}
	buildAt(t, file, cc, eds.WithMaxFileSize(int64(len(content))))
	checkPublished(t, cc.NextState(t), stateOf(t, content))
}

func TestWithMaxFileSizeRejectsNonPositive(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if _, err := eds.NewBuilder(eds.WithMaxFileSize(n)); err == nil || !strings.Contains(err.Error(), "WithMaxFileSize") {
			t.Errorf("WithMaxFileSize(%d): error %v, want one naming the option", n, err)
		}
	}
}

// Close returns while a read blocks, and nothing is reported after it.
func TestCloseDoesNotWaitForABlockedRead(t *testing.T) {
	inRead, release := make(chan struct{}), make(chan struct{})
	blocked := func(string) ([]byte, error) {
		close(inRead)
		<-release
		return []byte(assignment("10.0.0.1")), nil
	}
	cc := &fakeCC{}
	r := buildAt(t, "/srv/cla.json", cc, eds.WithReadFile(blocked))
	<-inRead
	closeReturns(t, r)
	close(release) // the read ends after Close: its result is dropped
	checkQuiet(t, cc)
}
