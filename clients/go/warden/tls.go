package warden

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TLSOptions connect the client with mutual TLS (TLS 1.3). Give either the
// three files, or CertsDir and User as the CLI takes them (`ca.crt`,
// `client.USER.crt`, `client.USER.key` in the certs dir; `warden cert
// create-client USER` makes them).
//
// The server must present a certificate signed by the CA that is valid for
// the host dialled (an IP address or DNS name of the endpoint) and is a
// node's (it carries a `warden://node/N` URI): a client certificate, or any
// other certificate the CA signed, is refused.
type TLSOptions struct {
	CAFile   string
	CertFile string
	KeyFile  string

	CertsDir string
	User     string
}

// TLSError names the file a TLS option could not be loaded from.
type TLSError struct {
	File string
	Err  error
}

func (e *TLSError) Error() string { return fmt.Sprintf("tls: %s: %v", e.File, e.Err) }
func (e *TLSError) Unwrap() error { return e.Err }

// CAOnly returns options that trust the CA but present no client
// certificate (e.g. for gRPC health checks, which need none).
func CAOnly(caFile string) *TLSOptions { return &TLSOptions{CAFile: caFile} }

func (o *TLSOptions) files() (ca, cert, key string, err error) {
	if o.CertsDir != "" {
		if o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" {
			return "", "", "", errors.New("tls: give either CertsDir and User or the CA, certificate and key files, not both")
		}
		user := o.User
		if user == "" {
			user = "root"
		}
		if strings.ContainsAny(user, `/\`) || strings.HasPrefix(user, ".") {
			return "", "", "", fmt.Errorf("tls: user %q is not a principal name", user)
		}
		return filepath.Join(o.CertsDir, "ca.crt"),
			filepath.Join(o.CertsDir, "client."+user+".crt"),
			filepath.Join(o.CertsDir, "client."+user+".key"), nil
	}
	if o.CAFile == "" {
		return "", "", "", errors.New("tls: CAFile (or CertsDir) is required")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return "", "", "", errors.New("tls: CertFile and KeyFile go together")
	}
	return o.CAFile, o.CertFile, o.KeyFile, nil
}

// Config is the crypto/tls configuration [New] connects with: TLS 1.3 at
// least, the CA of the options as the only root, the options' client
// certificate when they name one (none for [CAOnly]), and the check that
// the server's certificate is a node's (see [TLSOptions]). It is exported
// for the other things a caller dials on a node with the same trust, such
// as the HTTPS endpoints of `--admin-listen` (/readyz, /metrics), which
// present the node's certificate too.
//
// The files are read on each call. Errors: a [*TLSError] naming the file
// that is missing or holds no usable PEM, or an error saying which options
// are missing or do not go together.
func (o *TLSOptions) Config() (*tls.Config, error) {
	caFile, certFile, keyFile, err := o.files()
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, &TLSError{File: caFile, Err: err}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, &TLSError{File: caFile, Err: errors.New("no PEM certificate in it")}
	}
	cfg := &tls.Config{
		MinVersion:       tls.VersionTLS13,
		RootCAs:          roots,
		VerifyConnection: verifyNode,
	}
	if certFile != "" {
		if _, err := os.Stat(certFile); err != nil {
			return nil, &TLSError{File: certFile, Err: err}
		}
		if _, err := os.Stat(keyFile); err != nil {
			return nil, &TLSError{File: keyFile, Err: err}
		}
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			// The error says which of the two is wrong; name the pair.
			return nil, &TLSError{File: certFile + " + " + keyFile, Err: err}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// verifyNode runs after the chain and the host name were verified: the
// server's certificate must be a node's.
func verifyNode(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	for _, u := range cs.PeerCertificates[0].URIs {
		if strings.EqualFold(u.Scheme, "warden") && u.Host == "node" && len(u.Path) > 1 {
			return nil
		}
	}
	return errors.New("tls: the server's certificate is not a Warden node's (no warden://node/N URI)")
}
