// Package testpki makes throwaway certificates for tests: a certificate
// authority, the server and client certificates it signs, and PEM files of
// them. Keys are ECDSA P-256; certificates are valid from an hour ago to an
// hour from now. Nothing here is for production use.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority. Its methods are safe for concurrent use.
type CA struct {
	// Cert is the CA's certificate and DER its encoding.
	Cert *x509.Certificate
	DER  []byte
	// Pool holds Cert alone: the roots that trust what the CA signs.
	Pool *x509.CertPool
	key  *ecdsa.PrivateKey
}

// NewCA returns a new CA, failing tb on error.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	key := NewKey(tb)
	tmpl := template(tb, "lbkit test CA")
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, cert := create(tb, tmpl, tmpl, key, key)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, DER: der, Pool: pool, key: key}
}

// Leaf describes a certificate to issue.
type Leaf struct {
	// CommonName is the subject's common name.
	CommonName string
	// Usage is what the certificate is for: x509.ExtKeyUsageServerAuth or
	// x509.ExtKeyUsageClientAuth.
	Usage x509.ExtKeyUsage
	// DNSNames and IPs are the names a server certificate is valid for.
	DNSNames []string
	IPs      []net.IP
}

// Issue returns a certificate for l signed by ca: its DER encoding and
// its key.
func (ca *CA) Issue(tb testing.TB, l Leaf) ([]byte, *ecdsa.PrivateKey) {
	tb.Helper()
	key := NewKey(tb)
	der, _ := create(tb, leafTemplate(tb, l), ca.Cert, key, ca.key)
	return der, key
}

// SelfSigned returns a server certificate for l signed by its own key,
// ready for a tls.Config, and the pool that trusts it.
func SelfSigned(tb testing.TB, l Leaf) (tls.Certificate, *x509.CertPool) {
	tb.Helper()
	key := NewKey(tb)
	tmpl := leafTemplate(tb, l)
	der, cert := create(tb, tmpl, tmpl, key, key)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// NewKey returns a new ECDSA P-256 key, failing tb on error.
func NewKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// WritePEM writes der as a PEM block of type typ ("CERTIFICATE", "EC
// PRIVATE KEY") to dir/name and returns the file's path.
func WritePEM(tb testing.TB, dir, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// template returns the fields every certificate here shares.
func template(tb testing.TB, cn string) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
}

func leafTemplate(tb testing.TB, l Leaf) *x509.Certificate {
	tmpl := template(tb, l.CommonName)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{l.Usage}
	tmpl.DNSNames, tmpl.IPAddresses = l.DNSNames, l.IPs
	return tmpl
}

// create signs tmpl with signer as parent and returns the certificate.
func create(tb testing.TB, tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) ([]byte, *x509.Certificate) {
	tb.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return der, cert
}
