package warden

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// testPKI mints, for tests only, what `warden cert` makes: a CA, node
// certificates (IP SAN 127.0.0.1, URI warden://node/N) and client
// certificates (common name = principal, URI warden://principal/NAME).
type testPKI struct {
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	dir   string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{ca: ca, caKey: key, dir: t.TempDir()}
	writePEM(t, filepath.Join(p.dir, "ca.crt"), "CERTIFICATE", der)
	return p
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *testPKI) leaf(t *testing.T, cn string, uri string, usages []x509.ExtKeyUsage, ips []net.IP) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse(uri)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages, URIs: []*url.URL{u}, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return pair, der, keyDER
}

func (p *testPKI) client(t *testing.T, name string) {
	_, der, key := p.leaf(t, name, "warden://principal/"+name, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
	writePEM(t, filepath.Join(p.dir, "client."+name+".crt"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(p.dir, "client."+name+".key"), "PRIVATE KEY", key)
}

func (p *testPKI) serverCreds(t *testing.T, uri string) grpc.ServerOption {
	pair, _, _ := p.leaf(t, "node", uri, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.ParseIP("127.0.0.1")})
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
	}))
}

// Security (docs/security.md): with a certs dir and a user the client
// connects with mutual TLS as that principal, and trusts only a node's
// certificate signed by the CA.
func TestMutualTLSFromCertsDirAndUser(t *testing.T) {
	p := newTestPKI(t)
	p.client(t, "alice")
	n := startFake(t, p.serverCreds(t, "warden://node/1"))
	c, err := New([]string{n.addr}, Options{TLS: &TLSOptions{CertsDir: p.dir, User: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Status(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	if len(n.statusPeers) != 1 || n.statusPeers[0] != "alice" {
		t.Fatalf("the server saw client certificates %v", n.statusPeers)
	}
	// The same by files.
	files := &TLSOptions{CAFile: filepath.Join(p.dir, "ca.crt"),
		CertFile: filepath.Join(p.dir, "client.alice.crt"), KeyFile: filepath.Join(p.dir, "client.alice.key")}
	c2, err := New([]string{n.addr}, Options{TLS: files})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Status(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
}

// Security: a server whose certificate the CA signed but that is not a
// node's (no warden://node/N) is refused by the client.
func TestAServerThatIsNotANodeIsRefused(t *testing.T) {
	p := newTestPKI(t)
	p.client(t, "alice")
	n := startFake(t, p.serverCreds(t, "warden://principal/mallory"))
	c, err := New([]string{n.addr}, Options{TLS: &TLSOptions{CertsDir: p.dir, User: "alice"}, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Status(context.Background(), "r")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not a Warden node") {
		t.Fatalf("want unavailable naming the certificate, got %v", err)
	}
	if len(n.statusPeers) != 0 {
		t.Fatal("the call reached the impostor")
	}
}

// "What bad input gets": a missing or unreadable TLS file is a typed error
// naming the file; nothing connects.
func TestTLSFilesAreCheckedAtNew(t *testing.T) {
	p := newTestPKI(t)
	_, err := New([]string{"127.0.0.1:1"}, Options{TLS: &TLSOptions{CertsDir: p.dir, User: "nobody"}})
	var te *TLSError
	if !errors.As(err, &te) || te.File != filepath.Join(p.dir, "client.nobody.crt") {
		t.Fatalf("missing client certificate: %v", err)
	}
	bad := filepath.Join(p.dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = New([]string{"127.0.0.1:1"}, Options{TLS: &TLSOptions{CAFile: bad}})
	if !errors.As(err, &te) || te.File != bad {
		t.Fatalf("bad CA file: %v", err)
	}
	if _, err := New([]string{"127.0.0.1:1"}, Options{TLS: &TLSOptions{CAFile: bad, CertFile: "x"}}); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}

// Security (docs/security.md): Config is what a caller dials a node's other
// HTTPS endpoints with (the --admin-listen /readyz and /metrics): a node's
// certificate passes, one the CA signed for anything else is refused, and
// the options' client certificate is presented (none for CAOnly).
func TestConfigOverHTTPSChecksTheNode(t *testing.T) {
	p := newTestPKI(t)
	p.client(t, "alice")
	serve := func(uri string) *httptest.Server {
		pair, _, _ := p.leaf(t, "node", uri, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")})
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := "none"
			if len(r.TLS.PeerCertificates) > 0 {
				name = r.TLS.PeerCertificates[0].Subject.CommonName
			}
			_, _ = w.Write([]byte(name))
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS13}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point, not news
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	get := func(o *TLSOptions, url string) (string, error) {
		cfg, err := o.Config()
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	node, impostor := serve("warden://node/2"), serve("warden://principal/mallory")

	if who, err := get(CAOnly(filepath.Join(p.dir, "ca.crt")), node.URL); err != nil || who != "none" {
		t.Errorf("CA only, node: presented %q, %v; want none, nil", who, err)
	}
	if who, err := get(&TLSOptions{CertsDir: p.dir, User: "alice"}, node.URL); err != nil || who != "alice" {
		t.Errorf("alice, node: presented %q, %v; want alice, nil", who, err)
	}
	if _, err := get(CAOnly(filepath.Join(p.dir, "ca.crt")), impostor.URL); err == nil || !strings.Contains(err.Error(), "not a Warden node") {
		t.Errorf("CA only, impostor: %v; want the node check's refusal", err)
	}
}
