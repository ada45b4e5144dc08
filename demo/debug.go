package demo

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
)

// DebugPath is where a demo serves the channel's debug page.
const DebugPath = "/debug/lbkit/"

// ServeDebugPage serves ch's debug page on addr, prints its URL to out
// (prefixed with the demo's name), and returns the function that stops the
// server.
func ServeDebugPage(name, addr string, ch *conn.Channel, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(DebugPath, http.StripPrefix(DebugPath[:len(DebugPath)-1], debugpage.New(ch)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "%s: debug page: %v\n", name, err)
		}
	}()
	fmt.Fprintf(out, "%s: debug page at http://%s%s (JSON: ?format=json)\n", name, ln.Addr(), DebugPath)
	return func() {
		srv.Close()
		<-done
	}, nil
}
