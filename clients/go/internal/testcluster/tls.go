package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
)

// caOnlyTLS trusts the cluster's CA and presents no client certificate.
func caOnlyTLS(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, nil
}

// CAOnlyTLS trusts the cluster's CA and presents no client certificate
// (what a health probe does).
func (c *Cluster) CAOnlyTLS() (*tls.Config, error) {
	return caOnlyTLS(filepath.Join(c.CertsDir, "ca.crt"))
}
