package debugpage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
)

// The debug page of one channel, mounted under /debug/lbkit/ and read as
// JSON; without format=json the same path serves the HTML page.
func Example() {
	ch, err := conn.New("static:///127.0.0.1:1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/lbkit/", http.StripPrefix("/debug/lbkit", debugpage.New(ch)))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/lbkit/?format=json", nil))
	var snaps []struct {
		Target string `json:"target"`
		State  string `json:"state"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &snaps); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	for _, s := range snaps {
		fmt.Println(s.Target, s.State)
	}
	// Output:
	// 200 application/json
	// static:///127.0.0.1:1 IDLE
}
