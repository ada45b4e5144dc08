package grpcgo_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// An HTTP client whose backends send their ORCA load reports in the BIN
// form of the endpoint-load-metrics header (base64 of a serialized
// OrcaLoadReport, as Envoy and some model servers emit): nethttp's
// Transport hands the bytes to grpcgo.ParseLoadReport, so that
// weighted_round_robin weighs the backends by gRFC A58. The core module
// stays free of protobuf; only a program that links grpcgo decodes BIN.
func ExampleParseLoadReport_httpHeader() {
	report, _ := proto.Marshal(&v3orcapb.OrcaLoadReport{CpuUtilization: 0.5, RpsFractional: 100})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(nethttp.LoadReportHeader, "BIN "+base64.StdEncoding.EncodeToString(report))
	}))
	defer backend.Close()

	ch, err := conn.New("static:///"+strings.TrimPrefix(backend.URL, "http://"),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"weighted_round_robin": {}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true, DecodeBinLoadReport: grpcgo.ParseLoadReport}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://svc/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}
