package stress

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var long = flag.Bool("long", false, "run the long stress suite (make stress)")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// span returns short, or long under -long.
func span(short, longer time.Duration) time.Duration {
	if *long {
		return longer
	}
	return short
}

// count returns short, or long under -long.
func count(short, longer int) int {
	if *long {
		return longer
	}
	return short
}

// guard bounds a wait; it only turns a hang into a failure.
func guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openFDs counts the process's open file descriptors; it skips the test
// where /proc is missing.
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors here: %v", err)
	}
	return len(entries)
}

// waitFDs waits until the open file descriptors are back to baseline.
func waitFDs(t testing.TB, baseline int) {
	t.Helper()
	ctx := guard(t)
	for {
		runtime.GC()
		n := openFDs(t)
		if n <= baseline {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d file descriptors open, baseline %d", n, baseline)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tcpBackend accepts connections, discards what they send, and can kill
// every connection it holds (the listener stays up).
type tcpBackend struct {
	addr string
	ln   net.Listener
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startTCPBackend(t testing.TB) *tcpBackend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &tcpBackend{addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.stop)
	return b
}

func (b *tcpBackend) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			_, _ = io.Copy(io.Discard, c)
			c.Close()
			b.mu.Lock()
			delete(b.conns, c)
			b.mu.Unlock()
		}()
	}
}

// kill closes every connection held; it returns how many.
func (b *tcpBackend) kill() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		c.Close()
	}
	return len(b.conns)
}

func (b *tcpBackend) stop() {
	b.ln.Close()
	b.kill()
	b.wg.Wait()
}

// tally counts outcomes across goroutines.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
	errs   []string // the first few distinct failures, for the report
}

func (t *tally) add(what string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]int{}
	}
	t.counts[what] += n
}

func (t *tally) fail(what string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]int{}
	}
	t.counts[what]++
	if len(t.errs) < 5 {
		t.errs = append(t.errs, fmt.Sprintf("%s: %v", what, err))
	}
}

func (t *tally) get(what string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[what]
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%v", t.counts)
}

// workers runs goroutines that repeat one step until stopped.
type workers struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// startWorkers starts n goroutines, each calling step until end is called.
func startWorkers(n int, step func()) *workers {
	w := &workers{stop: make(chan struct{})}
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				default:
					step()
				}
			}
		}()
	}
	return w
}

// end stops the workers and waits for them.
func (w *workers) end() {
	close(w.stop)
	w.wg.Wait()
}

// closeReturns closes c and fails the test if Close hangs.
func closeReturns(t *testing.T, c io.Closer) {
	t.Helper()
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-guard(t).Done():
		t.Fatal("Close hung")
	}
}
