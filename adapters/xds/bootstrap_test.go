package xds_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "bootstrap", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseBootstrapValid(t *testing.T) {
	tests := []struct {
		name string
		doc  []byte
		want *xds.Bootstrap
	}{{
		name: "minimal",
		doc:  readTestdata(t, "minimal.json"),
		want: &xds.Bootstrap{Servers: []xds.Server{{URI: "localhost:18000", Creds: xds.Creds{Type: "insecure"}}}},
	}, {
		name: "full: first supported creds, features, node, unused gRPC fields",
		doc:  readTestdata(t, "full.json"),
		want: &xds.Bootstrap{
			Servers: []xds.Server{{
				URI:                    "xds.example.com:443",
				Creds:                  xds.Creds{Type: "tls", CAFile: "/etc/xds/ca.pem", CertFile: "/etc/xds/cert.pem", KeyFile: "/etc/xds/key.pem"},
				IgnoreResourceDeletion: true,
			}, {
				URI: "backup.example.com:443", Creds: xds.Creds{Type: "insecure"},
			}},
			Node: xds.Node{
				ID: "client-1", Cluster: "frontend",
				Locality: eds.Locality{Region: "eu-west1", Zone: "eu-west1-b", SubZone: "rack7"},
				Metadata: map[string]any{
					"team": "web", "replicas": 3.0, "canary": true,
					"tags": []any{"a", "b"}, "nested": map[string]any{"k": nil},
				},
			},
		},
	}, {
		name: "tls with system roots",
		doc:  readTestdata(t, "tls_ca_only.json"),
		want: &xds.Bootstrap{
			Servers: []xds.Server{{URI: "dns:///xds.internal:18000", Creds: xds.Creds{Type: "tls", CAFile: "/ca.pem"}}},
			Node:    xds.Node{ID: "n"},
		},
	}, {
		name: "tls without config, nulls as absent",
		doc:  []byte(`{"xds_servers":[{"server_uri":"a:1","channel_creds":[{"type":"tls"}],"server_features":null}],"node":{"id":null,"locality":null,"metadata":null}}`),
		want: &xds.Bootstrap{Servers: []xds.Server{{URI: "a:1", Creds: xds.Creds{Type: "tls"}}}},
	}, {
		name: "insecure ignores its config",
		doc:  []byte(`{"xds_servers":[{"server_uri":"a:1","channel_creds":[{"type":"insecure","config":{"x":1}}]}]}`),
		want: &xds.Bootstrap{Servers: []xds.Server{{URI: "a:1", Creds: xds.Creds{Type: "insecure"}}}},
	}, {
		name: "an unsupported entry after the chosen one is not looked at",
		doc:  []byte(`{"xds_servers":[{"server_uri":"a:1","channel_creds":[{"type":"insecure"},{"type":7}]}]}`),
		want: &xds.Bootstrap{Servers: []xds.Server{{URI: "a:1", Creds: xds.Creds{Type: "insecure"}}}},
	}, {
		name: "listener name template",
		doc:  []byte(`{"xds_servers":[{"server_uri":"a:1","channel_creds":[{"type":"insecure"}]}],"client_default_listener_resource_name_template":"mesh/%s/listener"}`),
		want: &xds.Bootstrap{Servers: []xds.Server{{URI: "a:1", Creds: xds.Creds{Type: "insecure"}}}, ListenerNameTemplate: "mesh/%s/listener"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := xds.ParseBootstrap(tt.doc)
			if err != nil {
				t.Fatalf("ParseBootstrap: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseBootstrap:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseBootstrapErrors(t *testing.T) {
	const insecure = `"channel_creds":[{"type":"insecure"}]`
	tests := []struct {
		name, doc, want string
	}{
		{"empty", ``, `want a JSON object, got nothing`},
		{"null", `null`, `want a JSON object, got null`},
		{"array", `[]`, `want a JSON object, got an array`},
		{"invalid JSON", `{"xds_servers":`, ``},
		{"duplicate key", `{"xds_servers":[],"xds_servers":[]}`, `xds_servers`},
		{"no servers", `{}`, `xds_servers: required`},
		{"servers not an array", `{"xds_servers":{}}`, `xds_servers: want an array, got an object`},
		{"servers empty", `{"xds_servers":[]}`, `xds_servers: empty: at least one server is required`},
		{"server not an object", `{"xds_servers":[1]}`, `xds_servers[0]: want a JSON object, got a number`},
		{"no server_uri", `{"xds_servers":[{` + insecure + `}]}`, `xds_servers[0].server_uri: required`},
		{"empty server_uri", `{"xds_servers":[{"server_uri":"",` + insecure + `}]}`, `xds_servers[0].server_uri: required`},
		{"server_uri not a string", `{"xds_servers":[{"server_uri":1,` + insecure + `}]}`, `xds_servers[0].server_uri: not a string`},
		{"second server bad", `{"xds_servers":[{"server_uri":"a",` + insecure + `},{"server_uri":"b"}]}`, `xds_servers[1].channel_creds: required`},
		{"creds not an array", `{"xds_servers":[{"server_uri":"a","channel_creds":{}}]}`, `xds_servers[0].channel_creds: want an array, got an object`},
		{"creds empty", `{"xds_servers":[{"server_uri":"a","channel_creds":[]}]}`, `xds_servers[0].channel_creds: empty: at least one entry is required`},
		{"creds unsupported", string(readTestdata(t, "unsupported_creds.json")), `xds_servers[0].channel_creds: no supported type among ["google_default"] (lbkit supports "insecure", "tls")`},
		{"creds entry not an object", `{"xds_servers":[{"server_uri":"a","channel_creds":["tls"]}]}`, `xds_servers[0].channel_creds[0]: want a JSON object, got a string`},
		{"creds type missing", `{"xds_servers":[{"server_uri":"a","channel_creds":[{}]}]}`, `xds_servers[0].channel_creds[0].type: required`},
		{"creds type not a string", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":1}]}]}`, `xds_servers[0].channel_creds[0].type: not a string`},
		{"tls config not an object", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"tls","config":[]}]}]}`, `xds_servers[0].channel_creds[0].config: want a JSON object, got an array`},
		{"tls ca not a string", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"tls","config":{"ca_certificate_file":true}}]}]}`, `xds_servers[0].channel_creds[0].config.ca_certificate_file: not a string`},
		{"tls cert without key", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"tls","config":{"certificate_file":"c"}}]}]}`, `xds_servers[0].channel_creds[0].config: certificate_file and private_key_file must be set together`},
		{"tls key without cert", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"x"},{"type":"tls","config":{"private_key_file":"k"}}]}]}`, `xds_servers[0].channel_creds[1].config: certificate_file and private_key_file must be set together`},
		{"tls bad refresh_interval", `{"xds_servers":[{"server_uri":"a","channel_creds":[{"type":"tls","config":{"refresh_interval":600}}]}]}`, `xds_servers[0].channel_creds[0].config.refresh_interval: want a duration string`},
		{"features not an array", `{"xds_servers":[{"server_uri":"a",` + insecure + `,"server_features":"ignore_resource_deletion"}]}`, `xds_servers[0].server_features: want an array, got a string`},
		{"node not an object", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":"n"}`, `node: want a JSON object, got a string`},
		{"node id not a string", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":{"id":1}}`, `node.id: not a string`},
		{"node cluster not a string", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":{"cluster":[]}}`, `node.cluster: not a string`},
		{"locality not an object", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":{"locality":"r"}}`, `node.locality: want a JSON object, got a string`},
		{"zone not a string", string(readTestdata(t, "bad_locality.json")), `node.locality.zone: not a string`},
		{"sub_zone not a string", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":{"locality":{"sub_zone":{}}}}`, `node.locality.sub_zone: not a string`},
		{"listener template not a string", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"client_default_listener_resource_name_template":1}`, `client_default_listener_resource_name_template: want string, got number`},
		{"metadata not an object", `{"xds_servers":[{"server_uri":"a",` + insecure + `}],"node":{"metadata":[1]}}`, `node.metadata: want an object, got an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := xds.ParseBootstrap([]byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseBootstrap accepted %s as %+v", tt.doc, b)
			}
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %v (%T) is not a *lb.ConfigError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestLoadBootstrapPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(file, []byte(`{"xds_servers":[{"server_uri":"from-file:1","channel_creds":[{"type":"insecure"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const config = `{"xds_servers":[{"server_uri":"from-env:1","channel_creds":[{"type":"insecure"}]}]}`
	tests := []struct {
		name            string
		fileEnv, cfgEnv string
		wantURI         string
		wantErr         func(error) bool
	}{
		{name: "file wins over config", fileEnv: file, cfgEnv: config, wantURI: "from-file:1"},
		{name: "config alone", cfgEnv: config, wantURI: "from-env:1"},
		{name: "file alone", fileEnv: file, wantURI: "from-file:1"},
		{name: "neither", wantErr: func(err error) bool { return errors.Is(err, xds.ErrNoBootstrap) }},
		{name: "missing file is an error, not a fallback", fileEnv: filepath.Join(dir, "nope.json"), cfgEnv: config, wantErr: func(err error) bool {
			return errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), filepath.Join(dir, "nope.json")) && strings.Contains(err.Error(), xds.BootstrapFileEnv)
		}},
		{name: "bad config names the variable", cfgEnv: `{}`, wantErr: func(err error) bool {
			var ce *lb.ConfigError
			return errors.As(err, &ce) && ce.Path == "xds_servers" && strings.Contains(err.Error(), xds.BootstrapConfigEnv)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(xds.BootstrapFileEnv, tt.fileEnv)
			t.Setenv(xds.BootstrapConfigEnv, tt.cfgEnv)
			b, err := xds.LoadBootstrap()
			if tt.wantErr != nil {
				if err == nil || !tt.wantErr(err) {
					t.Fatalf("LoadBootstrap: %v, %v; want the error described", b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Servers[0].URI; got != tt.wantURI {
				t.Errorf("server %q, want %q", got, tt.wantURI)
			}
		})
	}
}

func TestNodeProto(t *testing.T) {
	b, err := xds.ParseBootstrap(readTestdata(t, "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := b.Node.Proto()
	if p.GetId() != "client-1" || p.GetCluster() != "frontend" {
		t.Errorf("id %q cluster %q", p.GetId(), p.GetCluster())
	}
	if l := p.GetLocality(); l.GetRegion() != "eu-west1" || l.GetZone() != "eu-west1-b" || l.GetSubZone() != "rack7" {
		t.Errorf("locality %v", l)
	}
	md := p.GetMetadata().AsMap()
	if !reflect.DeepEqual(md, b.Node.Metadata) {
		t.Errorf("metadata %v, want %v", md, b.Node.Metadata)
	}
	if p.GetUserAgentName() != "lbkit" || p.GetUserAgentVersion() != "dev" {
		t.Errorf("user agent %q %q, want lbkit dev (a test binary has no module version)", p.GetUserAgentName(), p.GetUserAgentVersion())
	}
	if got := p.GetClientFeatures(); !reflect.DeepEqual(got, []string{"envoy.lb.does_not_support_overprovisioning"}) {
		t.Errorf("client features %v", got)
	}
	if empty := (xds.Node{}).Proto(); empty.GetLocality() != nil || empty.GetMetadata() != nil || empty.GetUserAgentName() != "lbkit" {
		t.Errorf("zero Node gives %v", empty)
	}
}

// FuzzParseBootstrap checks that ParseBootstrap never panics, that every
// error is a *lb.ConfigError, and that every accepted bootstrap has a
// server with a URI and supported credentials, whose Node converts.
func FuzzParseBootstrap(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "bootstrap", "*.json"))
	for _, in := range inputs {
		f.Add(readTestdata(f, filepath.Base(in)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := xds.ParseBootstrap(data)
		if err != nil {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *lb.ConfigError", err, err)
			}
			return
		}
		if len(b.Servers) == 0 {
			t.Fatal("accepted a bootstrap without servers")
		}
		for _, s := range b.Servers {
			if s.URI == "" || (s.Creds.Type != "insecure" && s.Creds.Type != "tls") {
				t.Fatalf("accepted server %+v", s)
			}
			if (s.Creds.CertFile == "") != (s.Creds.KeyFile == "") {
				t.Fatalf("accepted a certificate without its key: %+v", s.Creds)
			}
		}
		_ = b.Node.Proto()
	})
}

// A bootstrap file that is a FIFO is refused at once, not read: a channel's
// start cannot hang on it.
func TestLoadBootstrapRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Setenv(xds.BootstrapFileEnv, fifo)
	t.Setenv(xds.BootstrapConfigEnv, "")
	_, err := xds.LoadBootstrap()
	if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), xds.BootstrapFileEnv) {
		t.Errorf("LoadBootstrap of a FIFO: %v", err)
	}
}

// TestListenerNameFollowsTheTemplate: gRFC A27's
// client_default_listener_resource_name_template, "%s" by default.
func TestListenerNameFollowsTheTemplate(t *testing.T) {
	for _, tc := range []struct{ template, name, want string }{
		{"", "svc:80", "svc:80"},
		{"%s", "svc:80", "svc:80"},
		{"mesh/%s/listener", "svc:80", "mesh/svc:80/listener"},
		{"fixed", "svc:80", "fixed"},
	} {
		b := &xds.Bootstrap{ListenerNameTemplate: tc.template}
		if got := b.ListenerName(tc.name); got != tc.want {
			t.Errorf("template %q, name %q: %q, want %q", tc.template, tc.name, got, tc.want)
		}
	}
}
