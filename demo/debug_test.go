package demo_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/demo"
)

// A demo serves the debug page while it runs and prints its URL.
func TestServeDebugPage(t *testing.T) {
	ch, err := conn.New("passthrough:///127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var out bytes.Buffer
	stop, err := demo.ServeDebugPage("lbdemo", "127.0.0.1:0", ch, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	line := strings.TrimSpace(out.String())
	_, url, ok := strings.Cut(line, "lbdemo: debug page at ")
	url, _, _ = strings.Cut(url, " ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the debug page's URL", line)
	}
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"target": "passthrough:///127.0.0.1:1"`) {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
}
