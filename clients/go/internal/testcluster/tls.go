package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
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

// CAOnlyTLS is caOnlyTLS for the cluster's CA (TLS clusters only).
func (c *Cluster) CAOnlyTLS() (*tls.Config, error) { return caOnlyTLS(c.CertsDir + "/ca.crt") }
