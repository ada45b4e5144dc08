package eds_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// breakAssignment makes cla invalid one way or another, or leaves it as
// it is, and says which.
func breakAssignment(t *rapid.T, cla *eds.ClusterLoadAssignment) string {
	var eps []*eds.LbEndpoint
	for i := range cla.Endpoints {
		for j := range cla.Endpoints[i].LbEndpoints {
			eps = append(eps, &cla.Endpoints[i].LbEndpoints[j])
		}
	}
	switch rapid.IntRange(0, 4).Draw(t, "break") {
	case 1:
		cla.ClusterName = ""
		return "no name"
	case 2:
		if len(eps) > 1 {
			*eps[1] = *eps[0]
			return "a duplicate address"
		}
	case 3:
		if len(eps) > 0 {
			eps[0].Port = 0
			return "port 0"
		}
	case 4:
		cla.Endpoints[0].Priority = 200
		return "priority out of range"
	}
	return "valid"
}

// Check accepts exactly what Validate accepts, and ConvertValid gives what
// Convert gives, child names included, over a stream of assignments
// converted by two Namers, one per function.
func TestPropertyConvertValidIsConvert(t *testing.T) {
	policies := []eds.Policies{
		{},
		{Flat: true},
		{OutlierDetection: json.RawMessage(`{"interval":"5s"}`)},
	}
	rapid.Check(t, func(t *rapid.T) {
		var byConvert, byValid eds.Namer
		p := rapid.SampledFrom(policies).Draw(t, "policies")
		for step := range rapid.IntRange(1, 4).Draw(t, "steps") {
			cla := drawAssignment(t).cla
			how := breakAssignment(t, cla)
			v, checkErr := eds.Check(cla)
			if verr := cla.Validate(); fmt.Sprint(verr) != fmt.Sprint(checkErr) {
				t.Fatalf("step %d (%s): Check says %v, Validate %v", step, how, checkErr, verr)
			}
			want, wantErr := byConvert.Convert(cla, p)
			if checkErr != nil {
				if wantErr == nil {
					t.Fatalf("step %d (%s): Check refused it, Convert took it", step, how)
				}
				continue
			}
			if v.Assignment() != cla {
				t.Fatalf("step %d: Assignment() is not the assignment checked", step)
			}
			got, err := byValid.ConvertValid(v, p)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("step %d (%s): ConvertValid's error %v, Convert's %v", step, how, err, wantErr)
			}
			if fmt.Sprint(got.State.Degraded) != fmt.Sprint(want.State.Degraded) {
				t.Fatalf("step %d: ConvertValid's reason %v, Convert's %v", step, got.State.Degraded, want.State.Degraded)
			}
			got.State.Degraded, want.State.Degraded = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: ConvertValid gave\n%+v\nConvert gave\n%+v", step, got, want)
			}
		}
	})
}

func TestCheckRefusesNil(t *testing.T) {
	if _, err := eds.Check(nil); err == nil {
		t.Error("Check(nil) = nil error")
	}
}

func TestConvertValidRefusesTheZeroValid(t *testing.T) {
	var n eds.Namer
	if _, err := n.ConvertValid(eds.Valid{}, eds.Policies{}); err == nil {
		t.Error("ConvertValid of the zero Valid: nil error")
	}
	// n is unchanged: the first name it mints is still priority-0-0.
	st, err := n.State(&eds.ClusterLoadAssignment{ClusterName: "c", Endpoints: []eds.LocalityLbEndpoints{{
		LoadBalancingWeight: 1, LbEndpoints: []eds.LbEndpoint{{Address: "10.0.0.1", Port: 80}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"priorities":["priority-0-0"]`; !strings.Contains(string(st.ServiceConfig), want) {
		t.Errorf("service config %s lacks %s", st.ServiceConfig, want)
	}
}

// An assignment from Parse, checked once, converted without a second
// check.
func ExampleNamer_ConvertValid() {
	cla, err := eds.Parse([]byte(`{"cluster_name": "c", "endpoints": [{"load_balancing_weight": 1, "lb_endpoints": [
	  {"endpoint": {"address": {"socket_address": {"address": "10.0.0.1", "port_value": 80}}}}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := eds.Check(cla) // or keep v from an earlier Check, as an xDS client keeps the value it ACKed
	if err != nil {
		fmt.Println(err)
		return
	}
	var n eds.Namer
	c, err := n.ConvertValid(v, eds.Policies{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.State.Addresses[0].Addr)
	// Output:
	// 10.0.0.1:80
}
