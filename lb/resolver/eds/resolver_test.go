package eds_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// hangGuard bounds every wait; tests never sleep to let time pass.
const hangGuard = 10 * time.Second

const interval = 5 * time.Second

// fakeCC is lbtest's fake resolver.ClientConn.
type fakeCC = lbtest.ResolverClientConn

// reads counts the resolver's file reads, so a test can wait for one.
type reads struct {
	mu     sync.Mutex
	n      int
	signal chan struct{}
}

func (r *reads) readFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.signal != nil {
		close(r.signal)
		r.signal = nil
	}
	return data, err
}

func (r *reads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// waitFor waits until the resolver has made n reads. The read's content is
// then fixed; what the resolver does with it may still be under way.
func (r *reads) waitFor(t *testing.T, n int) {
	t.Helper()
	timeout := time.NewTimer(hangGuard)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		if r.n >= n {
			r.mu.Unlock()
			return
		}
		if r.signal == nil {
			r.signal = make(chan struct{})
		}
		ch := r.signal
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("read %d did not happen within %v (%d reads)", n, hangGuard, r.count())
		}
	}
}

// env is one resolver under test, reading a file in a temporary directory.
type env struct {
	file  string
	clk   *clock.Mock
	cc    *fakeCC
	reads *reads
	r     resolver.Resolver
}

func newEnv(t *testing.T, content string, cc *fakeCC) *env {
	t.Helper()
	return newEnvLogging(t, content, cc, nil)
}

// newEnvLogging is newEnv with the resolver logging to logger.
func newEnvLogging(t *testing.T, content string, cc *fakeCC, logger *slog.Logger) *env {
	t.Helper()
	e := &env{file: filepath.Join(t.TempDir(), "cla.json"), clk: clock.NewMock(), cc: cc, reads: &reads{}}
	if content != "" {
		e.write(t, content)
	}
	b, err := eds.NewBuilder(eds.WithPollInterval(interval), eds.WithReadFile(e.reads.readFile))
	if err != nil {
		t.Fatal(err)
	}
	target, err := resolver.ParseTarget("eds://"+e.file, "passthrough")
	if err != nil {
		t.Fatal(err)
	}
	e.r, err = b.Build(target, cc, resolver.BuildOptions{Clock: e.clk, Logger: logger})
	if err != nil {
		t.Fatalf("Build(%v): %v", target, err)
	}
	t.Cleanup(e.r.Close)
	return e
}

func (e *env) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(e.file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// poll advances the clock by one interval and waits for the read it causes.
func (e *env) poll(t *testing.T) {
	t.Helper()
	n := e.reads.count()
	e.clk.Add(interval)
	e.reads.waitFor(t, n+1)
}

// assignment returns a valid assignment with one endpoint per address, all
// in one locality at priority 0.
func assignment(addrs ...string) string {
	var eps []string
	for _, a := range addrs {
		eps = append(eps, ep(a, 80))
	}
	return `{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"lb_endpoints":[` + strings.Join(eps, ",") + `]}]}`
}

// stateOf is what a fresh Namer makes of content.
func stateOf(t *testing.T, content string) resolver.State {
	t.Helper()
	cla, err := eds.Parse([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	st, err := new(eds.Namer).State(cla)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func checkPublished(t *testing.T, got, want resolver.State) {
	t.Helper()
	if !slices.Equal(got.Addresses, want.Addresses) || string(got.ServiceConfig) != string(want.ServiceConfig) {
		t.Fatalf("published %v %s\nwant %v %s", got.Addresses, got.ServiceConfig, want.Addresses, want.ServiceConfig)
	}
}

// The resolver publishes nothing more than what the test has read.
func checkQuiet(t *testing.T, cc *fakeCC) {
	t.Helper()
	if p := cc.Events.Peek(); len(p) > 0 {
		t.Fatalf("unexpected ClientConn calls %v", p)
	}
}

// Describe names the file, the content's hash and the addresses published,
// and the problem that stands: an invalid file, until a valid one.
func TestDescribeShowsTheFileAndTheProblem(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, assignment("10.0.0.1", "10.0.0.2"), cc)
	cc.NextState(t)
	d := e.r.(resolver.Describer).Describe()
	facts := map[string]string{}
	for _, f := range d.Facts {
		facts[f.Name] = f.Value
	}
	if facts["file"] != e.file || facts["addresses published"] != "2" || len(facts["content SHA-256"]) != 16 || d.LastError != "" {
		t.Errorf("Describe = %+v", d)
	}
	e.write(t, `{"cluster_name":""}`)
	e.poll(t)
	cc.NextError(t)
	if d := e.r.(resolver.Describer).Describe(); !strings.Contains(d.LastError, "cluster_name") {
		t.Errorf("after an invalid file: LastError %q", d.LastError)
	}
	e.write(t, assignment("10.0.0.3"))
	e.poll(t)
	cc.NextState(t)
	if d := e.r.(resolver.Describer).Describe(); d.LastError != "" {
		t.Errorf("after a valid file: LastError %q", d.LastError)
	}
}
