package robustness

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// Finding is an observation outside the models: evidence of a known or new
// problem, with when (ns since the run's start) and the text seen.
type Finding struct {
	Kind  string `json:"kind"`
	At    int64  `json:"at_ns"`
	Node  int    `json:"node"`
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// monitor asks each node directly, every 200 ms, for a renew of a lease
// no one has (a write only the leader serves): the leader answers NotFound,
// a follower "not the leader; the leader is node N at ADDR". A node that
// names itself as the leader it is not is recorded (a black-box check saw it once).
type monitor struct {
	c   *Cluster
	rec *Recorder

	mu       sync.Mutex
	findings map[string]*Finding
	probes   int
}

var notLeaderRe = regexp.MustCompile(`the leader is node (\d+) at (\S+)`)

func (m *monitor) note(kind string, node int, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := fmt.Sprintf("%s/%d", kind, node)
	if f, ok := m.findings[key]; ok {
		f.Count++
		return
	}
	m.findings[key] = &Finding{Kind: kind, At: m.rec.Now(), Node: node, Text: text, Count: 1}
}

func clientTLS(certsDir string) (*tls.Config, error) {
	ca, err := os.ReadFile(filepath.Join(certsDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s/ca.crt", certsDir)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(certsDir, "client.root.crt"), filepath.Join(certsDir, "client.root.key"))
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1",
		MinVersion: tls.VersionTLS13}, nil
}

func (m *monitor) run(ctx context.Context) {
	cfg, err := clientTLS(m.c.CertsDir)
	if err != nil {
		m.note("monitor-error", 0, err.Error())
		return
	}
	var wg sync.WaitGroup
	for _, n := range m.c.Nodes {
		conn, err := grpc.NewClient(n.Addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			m.note("monitor-error", n.ID, err.Error())
			continue
		}
		wg.Add(1)
		go func(n *Node, conn *grpc.ClientConn) {
			defer wg.Done()
			defer conn.Close()
			lock := wardenpb.NewLockClient(conn)
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				_, err := lock.Renew(cctx, &wardenpb.RenewRequest{LeaseId: 1<<53 - 1, ClientId: 1, Sequence: 1})
				cancel()
				m.mu.Lock()
				m.probes++
				m.mu.Unlock()
				if err == nil {
					continue
				}
				msg := status.Convert(err).Message()
				if g := notLeaderRe.FindStringSubmatch(msg); g != nil {
					id, _ := strconv.Atoi(g[1])
					if id == n.ID || g[2] == n.Addr {
						m.note("node-names-itself-leader", n.ID, fmt.Sprintf("node %d (%s) answered %q", n.ID, n.Addr, msg))
					}
				}
			}
		}(n, conn)
	}
	wg.Wait()
}

func (m *monitor) list() []Finding {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Finding
	for _, f := range m.findings {
		out = append(out, *f)
	}
	return out
}

// logPatterns are node log lines worth reporting, by finding kind.
var logPatterns = []struct{ kind, substr string }{
	{"h2-reset-flood-disconnect", "reached limit"},
	{"panic", "panicked"},
}

// scanLogs counts the node log lines matching logPatterns, keeping the
// first of each per node as evidence.
func scanLogs(c *Cluster) []Finding {
	var out []Finding
	for _, n := range c.Nodes {
		f, err := os.Open(n.LogFile)
		if err != nil {
			continue
		}
		byKind := map[string]*Finding{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			for _, p := range logPatterns {
				if strings.Contains(line, p.substr) {
					if fd, ok := byKind[p.kind]; ok {
						fd.Count++
					} else {
						byKind[p.kind] = &Finding{Kind: p.kind, Node: n.ID, Text: strings.TrimSpace(line), Count: 1}
					}
				}
			}
		}
		f.Close()
		for _, p := range logPatterns {
			if fd, ok := byKind[p.kind]; ok {
				out = append(out, *fd)
			}
		}
	}
	return out
}
