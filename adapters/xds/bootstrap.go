package xds

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/lbkit/lbkit/lb/resolver/regularfile"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// The environment variables gRPC reads its xDS bootstrap from, in the order
// [LoadBootstrap] tries them.
const (
	// BootstrapFileEnv names a file holding the bootstrap JSON.
	BootstrapFileEnv = "GRPC_XDS_BOOTSTRAP"
	// BootstrapConfigEnv holds the bootstrap JSON itself.
	BootstrapConfigEnv = "GRPC_XDS_BOOTSTRAP_CONFIG"
)

// ErrNoBootstrap is returned by [LoadBootstrap] when neither
// [BootstrapFileEnv] nor [BootstrapConfigEnv] is set (or both are empty):
// there is no bootstrap to load, as opposed to a bad one.
var ErrNoBootstrap = errors.New("xds: no bootstrap: set " + BootstrapFileEnv + " (a file) or " + BootstrapConfigEnv + " (the JSON)")

// The channel credential types lbkit supports, in the order listed in
// error messages.
const (
	credsInsecure = "insecure"
	credsTLS      = "tls"
)

// Bootstrap is what lbkit takes from gRPC's xDS bootstrap JSON (gRFC A27;
// the "tls" credentials of gRFC A65; the "ignore_resource_deletion" server
// feature of gRFC A53). Build one with [ParseBootstrap] or
// [LoadBootstrap], or by hand. A Bootstrap is a plain value: safe for
// concurrent reads, never changed by this package.
type Bootstrap struct {
	// Servers are the management servers from xds_servers, in order of
	// priority; a parsed Bootstrap has at least one. The first is used
	// while it can be reached or everything watched is cached; the others
	// are fallbacks (gRFC A71, see [Builder]).
	Servers []Server
	// Node identifies this client to the management servers (node).
	Node Node
	// ListenerNameTemplate is client_default_listener_resource_name_template
	// (gRFC A27): the name of the listener an "xds:///NAME" target
	// follows is this with every "%s" replaced by NAME. Empty means the
	// default, "%s".
	ListenerNameTemplate string
}

// ListenerName returns the name of the listener a target whose path is
// name follows: [Bootstrap.ListenerNameTemplate] with every "%s" replaced
// by name (gRFC A27), or name itself without a template.
func (b *Bootstrap) ListenerName(name string) string {
	if b.ListenerNameTemplate == "" {
		return name
	}
	return strings.ReplaceAll(b.ListenerNameTemplate, "%s", name)
}

// Server is one entry of xds_servers.
type Server struct {
	// URI is server_uri, a gRPC target such as "dns:///xds.example:18000"
	// or "localhost:18000".
	URI string
	// Creds are the first entry of channel_creds whose type lbkit
	// supports; entries of other types before it are skipped, as gRPC
	// does.
	Creds Creds
	// IgnoreResourceDeletion is set when server_features lists
	// "ignore_resource_deletion" (gRFC A53): the client then keeps using a
	// resource the server stops sending instead of treating it as deleted.
	IgnoreResourceDeletion bool
}

// Creds are the channel credentials for a management server.
type Creds struct {
	// Type is "insecure" (plaintext) or "tls".
	Type string
	// CAFile is ca_certificate_file: PEM roots to verify the server with;
	// empty means the system's roots. Only for "tls".
	CAFile string
	// CertFile and KeyFile are certificate_file and private_key_file: the
	// client's PEM certificate chain and key for mutual TLS; both or
	// neither are set. Only for "tls".
	CertFile, KeyFile string
}

// Node is the bootstrap's node: who this client is.
type Node struct {
	// ID is id, an opaque identifier of this client.
	ID string
	// Cluster is cluster, the service cluster this client runs in.
	Cluster string
	// Locality is locality: where this client runs.
	Locality eds.Locality
	// Metadata is metadata, any JSON object, as encoding/json decodes it
	// (numbers are float64). Nil when absent.
	Metadata map[string]any
}

// ParseBootstrap parses an xDS bootstrap JSON document as gRPC defines it:
//
//	{
//	  "xds_servers": [{
//	    "server_uri": "xds.example:18000",
//	    "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/ca.pem"}}],
//	    "server_features": ["ignore_resource_deletion"]
//	  }],
//	  "node": {"id": "n1", "cluster": "c", "locality": {"region": "r", "zone": "z", "sub_zone": "s"},
//	           "metadata": {"k": "v"}}
//	}
//
// The rules:
//   - xds_servers is required and non-empty; each entry needs a non-empty
//     server_uri and a channel_creds list with at least one type lbkit
//     supports ("insecure", "tls"); the first supported entry wins, and
//     only its config is checked;
//   - "tls" config (gRFC A65): ca_certificate_file, certificate_file and
//     private_key_file are optional strings, but certificate_file and
//     private_key_file come together; refresh_interval, if present, must
//     be a proto3 JSON duration and is otherwise unused (see
//     [Server.DialOptions] for when the files are read);
//   - server_features entries that are not strings, or strings lbkit does
//     not know (such as "xds_v3"), are ignored, as the format asks;
//   - node and each of its fields are optional; locality's fields are
//     region, zone and sub_zone; metadata must be an object.
//
// client_default_listener_resource_name_template, when present, must be a
// string ([Bootstrap.ListenerNameTemplate]).
//
// Unknown fields are ignored, as gRPC ignores them, and so are fields
// gRPC knows that lbkit does not use: certificate_providers,
// server_listener_resource_name_template and authorities (lbkit's
// targets name no authority). As in every lbkit JSON document, a key
// given twice in one object is an error.
//
// An error is a [*lb.ConfigError] whose path is the JSON path, such as
// `xds_servers[0].server_uri: required`.
func ParseBootstrap(data []byte) (*Bootstrap, error) {
	if t := strings.TrimSpace(string(data)); t == "" || t == "null" {
		return nil, lb.ConfigErrorf("", "want a JSON object, got %s", describe(data))
	}
	obj, err := lb.ParseConfigObject(data)
	if err != nil {
		return nil, err
	}
	b := &Bootstrap{}
	raw, _, ok := obj.Raw("xds_servers")
	if !ok || isNull(raw) {
		return nil, lb.ConfigErrorf("xds_servers", "required")
	}
	servers, err := jsonArray(raw)
	if err != nil {
		return nil, lb.ConfigErrorf("xds_servers", "want an array, got %s", describe(raw))
	}
	if len(servers) == 0 {
		return nil, lb.ConfigErrorf("xds_servers", "empty: at least one server is required")
	}
	for i, s := range servers {
		srv, err := parseServer(s)
		if err != nil {
			return nil, lb.PrefixConfigError("xds_servers["+strconv.Itoa(i)+"]", err)
		}
		b.Servers = append(b.Servers, srv)
	}
	if raw, _, ok := obj.Raw("node"); ok && !isNull(raw) {
		if b.Node, err = parseNode(raw); err != nil {
			return nil, lb.PrefixConfigError("node", err)
		}
	}
	if err := obj.Decode(&b.ListenerNameTemplate, "client_default_listener_resource_name_template"); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxBootstrapSize is the largest bootstrap file LoadBootstrap reads: 1 MiB.
const MaxBootstrapSize = 1 << 20

// LoadBootstrap reads the bootstrap as gRPC does: from the file named by
// [BootstrapFileEnv] when that is set and not empty, else from the JSON in
// [BootstrapConfigEnv]; [ErrNoBootstrap] when neither is set. The file
// must be a regular file of at most [MaxBootstrapSize] bytes: a FIFO or a
// device is refused without a byte read, so a misconfiguration cannot hang
// a channel's start. A file that cannot be read is an error naming the
// variable and the path; a document
// [ParseBootstrap] refuses is an error naming where it came from and
// wrapping the [*lb.ConfigError].
func LoadBootstrap() (*Bootstrap, error) {
	if path := os.Getenv(BootstrapFileEnv); path != "" {
		data, err := regularfile.Read(path, MaxBootstrapSize)
		if err != nil {
			return nil, fmt.Errorf("xds: bootstrap file %q (from %s): %w", path, BootstrapFileEnv, err)
		}
		b, err := ParseBootstrap(data)
		if err != nil {
			return nil, fmt.Errorf("xds: bootstrap file %q (from %s): %w", path, BootstrapFileEnv, err)
		}
		return b, nil
	}
	if config := os.Getenv(BootstrapConfigEnv); config != "" {
		b, err := ParseBootstrap([]byte(config))
		if err != nil {
			return nil, fmt.Errorf("xds: bootstrap from %s: %w", BootstrapConfigEnv, err)
		}
		return b, nil
	}
	return nil, ErrNoBootstrap
}

// parseServer parses one entry of xds_servers.
func parseServer(raw json.RawMessage) (Server, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return Server{}, err
	}
	var s Server
	uri, err := stringField(obj, "server_uri")
	if err != nil {
		return Server{}, err
	}
	if uri == "" {
		return Server{}, lb.ConfigErrorf("server_uri", "required")
	}
	s.URI = uri
	if s.Creds, err = parseChannelCreds(obj); err != nil {
		return Server{}, err
	}
	if raw, _, ok := obj.Raw("server_features"); ok && !isNull(raw) {
		features, err := jsonArray(raw)
		if err != nil {
			return Server{}, lb.ConfigErrorf("server_features", "want an array, got %s", describe(raw))
		}
		for _, f := range features {
			var name string
			if json.Unmarshal(f, &name) == nil && name == "ignore_resource_deletion" {
				s.IgnoreResourceDeletion = true
			}
		}
	}
	return s, nil
}

// parseChannelCreds picks the first supported entry of channel_creds.
func parseChannelCreds(obj lb.ConfigObject) (Creds, error) {
	raw, _, ok := obj.Raw("channel_creds")
	if !ok || isNull(raw) {
		return Creds{}, lb.ConfigErrorf("channel_creds", "required")
	}
	entries, err := jsonArray(raw)
	if err != nil {
		return Creds{}, lb.ConfigErrorf("channel_creds", "want an array, got %s", describe(raw))
	}
	if len(entries) == 0 {
		return Creds{}, lb.ConfigErrorf("channel_creds", "empty: at least one entry is required")
	}
	var unsupported []string
	for i, e := range entries {
		at := "channel_creds[" + strconv.Itoa(i) + "]"
		entry, err := lb.ParseConfigObject(e)
		if err != nil {
			return Creds{}, lb.PrefixConfigError(at, err)
		}
		typ, err := stringField(entry, "type")
		if err != nil {
			return Creds{}, lb.PrefixConfigError(at, err)
		}
		config, _, _ := entry.Raw("config")
		switch typ {
		case credsInsecure:
			return Creds{Type: typ}, nil
		case credsTLS:
			c, err := parseTLSConfig(config)
			return c, lb.PrefixConfigError(at+".config", err)
		case "":
			return Creds{}, lb.ConfigErrorf(at+".type", "required")
		}
		unsupported = append(unsupported, strconv.Quote(typ))
	}
	return Creds{}, lb.ConfigErrorf("channel_creds", "no supported type among [%s] (lbkit supports %q, %q)",
		strings.Join(unsupported, ", "), credsInsecure, credsTLS)
}

// parseTLSConfig parses the config of "tls" channel credentials (gRFC
// A65).
func parseTLSConfig(raw json.RawMessage) (Creds, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return Creds{}, err
	}
	c := Creds{Type: credsTLS}
	if err := stringFields(obj, namedString{"ca_certificate_file", &c.CAFile},
		namedString{"certificate_file", &c.CertFile}, namedString{"private_key_file", &c.KeyFile}); err != nil {
		return Creds{}, err
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return Creds{}, lb.ConfigErrorf("", "certificate_file and private_key_file must be set together")
	}
	if raw, _, ok := obj.Raw("refresh_interval"); ok {
		if _, err := lb.ParseDuration(raw); err != nil {
			return Creds{}, lb.PrefixConfigError("refresh_interval", err)
		}
	}
	return c, nil
}

// parseNode parses the bootstrap's node.
func parseNode(raw json.RawMessage) (Node, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return Node{}, err
	}
	var n Node
	if err := stringFields(obj, namedString{"id", &n.ID}, namedString{"cluster", &n.Cluster}); err != nil {
		return Node{}, err
	}
	if raw, _, ok := obj.Raw("locality"); ok && !isNull(raw) {
		loc, err := lb.ParseConfigObject(raw)
		if err != nil {
			return Node{}, lb.PrefixConfigError("locality", err)
		}
		if err := stringFields(loc, namedString{"region", &n.Locality.Region},
			namedString{"zone", &n.Locality.Zone}, namedString{"sub_zone", &n.Locality.SubZone}); err != nil {
			return Node{}, lb.PrefixConfigError("locality", err)
		}
	}
	if raw, _, ok := obj.Raw("metadata"); ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &n.Metadata); err != nil || n.Metadata == nil {
			return Node{}, lb.ConfigErrorf("metadata", "want an object, got %s", describe(raw))
		}
	}
	return n, nil
}

// stringField returns the string field name of obj: "" when absent or
// null, an error at name when not a string.
func stringField(obj lb.ConfigObject, name string) (string, error) {
	raw, _, ok := obj.Raw(name)
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", lb.ConfigErrorf(name, "not a string")
	}
	return s, nil
}

// namedString is a string field to read: its name and where it goes.
type namedString struct {
	name string
	dst  *string
}

// stringFields reads each of fields from obj with stringField, stopping at
// the first error.
func stringFields(obj lb.ConfigObject, fields ...namedString) error {
	for _, f := range fields {
		var err error
		if *f.dst, err = stringField(obj, f.name); err != nil {
			return err
		}
	}
	return nil
}

// jsonArray decodes raw, one JSON array, into its elements.
func jsonArray(raw json.RawMessage) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, err
	}
	if elems == nil {
		return nil, errors.New("null")
	}
	return elems, nil
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// describe names the JSON type of raw for an error message.
func describe(raw json.RawMessage) string {
	if strings.TrimSpace(string(raw)) == "" {
		return "nothing"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON"
	}
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// DialOptions returns the options that give a connection to s its
// transport credentials:
//   - "insecure": plaintext;
//   - "tls": TLS 1.2 or later, verifying the server against the roots in
//     CAFile, or the system's roots when CAFile is empty; with CertFile and
//     KeyFile, the client presents that certificate (mutual TLS).
//
// CAFile is read, and the key pair loaded, here: a file that cannot be
// read or holds no usable PEM is an error naming the file. The key pair is
// read again at every handshake, so a rotated certificate is used from the
// next connection on (which is why refresh_interval has no use); a
// handshake whose files have become unreadable fails, and the connection
// is retried. A Creds of another type is an error. DialOptions may be
// called concurrently.
func (s Server) DialOptions() ([]grpc.DialOption, error) {
	switch s.Creds.Type {
	case credsInsecure:
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	case credsTLS:
		cfg, err := s.Creds.tlsConfig()
		if err != nil {
			return nil, err
		}
		return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}, nil
	}
	return nil, fmt.Errorf("xds: server %q: channel credentials type %q is not supported (lbkit supports %q, %q)",
		s.URI, s.Creds.Type, credsInsecure, credsTLS)
}

// tlsConfig builds the client TLS config of "tls" credentials.
func (c Creds) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("xds: tls credentials: ca_certificate_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("xds: tls credentials: ca_certificate_file %q: no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("xds: tls credentials: certificate_file and private_key_file must be set together")
	}
	if c.CertFile != "" {
		if _, err := c.keyPair(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c.keyPair() }
	}
	return cfg, nil
}

// keyPair loads the client's certificate and key.
func (c Creds) keyPair() (*tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("xds: tls credentials: certificate_file %q, private_key_file %q: %w", c.CertFile, c.KeyFile, err)
	}
	return &pair, nil
}

// Client features lbkit announces in its Node, as gRPC does.
const featureNoOverprovisioning = "envoy.lb.does_not_support_overprovisioning"

// userAgentName is the Node's user_agent_name.
const userAgentName = "lbkit"

// modulePath is this module's path, looked up in the build info for the
// Node's user_agent_version.
const modulePath = "github.com/lbkit/lbkit/adapters/xds"

// Proto returns the envoy.config.core.v3.Node the client sends in its
// discovery requests: id, cluster, locality and metadata from n;
// user_agent_name "lbkit"; user_agent_version this module's version from
// the binary's build info, or "dev" when it has none (a build inside the
// module, a local replace); and the client feature
// "envoy.lb.does_not_support_overprovisioning", as gRPC sends it (lbkit
// ignores the EDS overprovisioning_factor). Metadata values that
// structpb cannot hold (anything encoding/json does not produce) are left
// out. Each call returns a new message.
func (n Node) Proto() *corev3.Node {
	p := &corev3.Node{
		Id:                   n.ID,
		Cluster:              n.Cluster,
		UserAgentName:        userAgentName,
		UserAgentVersionType: &corev3.Node_UserAgentVersion{UserAgentVersion: moduleVersion()},
		ClientFeatures:       []string{featureNoOverprovisioning},
	}
	if n.Locality != (eds.Locality{}) {
		p.Locality = &corev3.Locality{Region: n.Locality.Region, Zone: n.Locality.Zone, SubZone: n.Locality.SubZone}
	}
	if n.Metadata != nil {
		md := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(n.Metadata))}
		for k, v := range n.Metadata {
			if pv, err := structpb.NewValue(v); err == nil {
				md.Fields[k] = pv
			}
		}
		p.Metadata = md
	}
	return p
}

// moduleVersion returns this module's version as the binary records it,
// or "dev".
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m.Path != modulePath {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if m.Version == "" || m.Version == "(devel)" {
			return "dev"
		}
		return m.Version
	}
	return "dev"
}
