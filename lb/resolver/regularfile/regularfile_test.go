package regularfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver/regularfile"
)

func TestReadRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, name := range []string{fifo, dir, "/dev/zero"} {
		if _, err := regularfile.Read(name, 1<<20); !errors.Is(err, regularfile.ErrNotRegular) {
			t.Errorf("Read(%s): %v, want ErrNotRegular", name, err)
		}
	}
}

func TestReadHoldsTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := regularfile.Read(path, 10); err != nil || string(data) != "0123456789" {
		t.Errorf("Read at the limit: %q, %v", data, err)
	}
	if _, err := regularfile.Read(path, 9); !errors.Is(err, regularfile.ErrTooLarge) {
		t.Errorf("Read over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := regularfile.Read(filepath.Join(t.TempDir(), "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file: %v", err)
	}
}
