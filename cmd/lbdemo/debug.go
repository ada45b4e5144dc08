package main

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

// debugPath is where the demo serves the debug page.
const debugPath = "/debug/lbkit/"

// serveDebugPage serves ch's debug page on addr, prints its URL to out, and
// returns the function that stops the server.
func serveDebugPage(addr string, ch *conn.Channel, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(debugPath, http.StripPrefix(debugPath[:len(debugPath)-1], debugpage.New(ch)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "lbdemo: debug page: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "lbdemo: debug page at http://%s%s (JSON: ?format=json)\n", ln.Addr(), debugPath)
	return func() {
		srv.Close()
		<-done
	}, nil
}
