// Package scrape reads every Warden node's /metrics once per Interval while
// a workload runs, as a Prometheus server scraping the cluster would: one
// keep-alive connection per node (HTTP/1.1), over HTTPS with root's client
// certificate when the cluster has certificates, the whole body read, the
// nodes' scrapes spread over the interval rather than all at once. It runs
// in the caller's process (gobench's, beside the load it generates, on the
// same cores), not in a process of its own.
// gobench's `warden-go-scraped` backend runs one Scraper beside each
// workload, so its rows carry the cost of being scraped; Stats is what the
// row records about the scrapes themselves.
//
// A scrape fails on a transport error, a status other than 200, or a body
// without `warden_build_info` (so a binary without metrics, or another
// service on the port, cannot pass for one). A 401 or 403 means the client
// certificate setup is wrong (docs/operations.md, "Metrics"); Check turns
// more than MaxFailures failures into an error naming the first.
package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/warden-locks/warden/bench/go/internal/lockers"
	"github.com/warden-locks/warden/bench/go/internal/workload"
)

// MaxFailures is how many failed scrapes a workload may have before Check
// fails it (a node answering 503 while it starts, a scrape cut by a
// stall of the shared cores).
const MaxFailures = 3

// marker is a series every Warden /metrics body has (docs/operations.md).
var marker = []byte("warden_build_info")

// Config says what to scrape.
type Config struct {
	// Addrs are the nodes' --admin-listen addresses (host:port).
	Addrs []string
	// CertsDir holds ca.crt and client.root.crt/.key (internal/cluster's
	// Cluster.CertsDir); empty: plain HTTP, for an insecure cluster.
	CertsDir string
	// Interval between the starts of two scrapes of one node; also each
	// scrape's timeout (Prometheus requires scrape_timeout <= interval).
	Interval time.Duration
}

// Stats are the scrapes of one workload, every node together (gobench
// writes them into the row as scrapes, scrape_failures, scrape_bytes,
// scrape_p50_ms, scrape_max_ms, scrape_first_error).
type Stats struct {
	Scrapes  int
	Failures int
	Bytes    int64
	// P50ms and MaxMs: one scrape, request sent to the last byte of the
	// body read (successful scrapes only, nearest-rank as
	// workload.Latencies; nil when there were none).
	P50ms *float64
	MaxMs *float64
	// FirstError is the first failure, empty when none.
	FirstError string
}

// Check is nil unless more than MaxFailures scrapes failed.
func (s Stats) Check() error {
	if s.Failures <= MaxFailures {
		return nil
	}
	return fmt.Errorf("%d of %d scrapes of /metrics failed (at most %d may); the first: %s",
		s.Failures, s.Scrapes, MaxFailures, s.FirstError)
}

// Scraper is a running set of scrape loops, one per node.
type Scraper struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	stats    Stats
	lat      workload.Latencies
	stopping bool
}

// client is an HTTP client for cfg: HTTPS with root's certificate when
// cfg.CertsDir is set, through the TLS configuration the Go client dials
// the cluster with (clients/go's TLSOptions.Config: the CA, root's
// certificate, and the check that the server's certificate is a node's,
// which the --admin-listen endpoints present too).
func client(cfg Config) (*http.Client, string, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: 5 * cfg.Interval}
	scheme := "http"
	if cfg.CertsDir != "" {
		tlsCfg, err := lockers.WardenOptions(cfg.CertsDir).TLS.Config()
		if err != nil {
			return nil, "", fmt.Errorf("scrape: %w", err)
		}
		scheme, tr.TLSClientConfig = "https", tlsCfg
	}
	return &http.Client{Transport: tr, Timeout: cfg.Interval}, scheme, nil
}

// firstScrape is when node i of n is first scraped, after Start: the nodes'
// first scrapes spread evenly over one interval (i × interval / n), as
// Prometheus spreads its targets' scrapes, so the cluster sees one scrape
// every interval / n rather than a burst of n each interval.
func firstScrape(i, n int, interval time.Duration) time.Duration {
	return time.Duration(i) * interval / time.Duration(n)
}

// Start begins scraping every node once per cfg.Interval until Stop, node
// i's first scrape i × cfg.Interval / len(cfg.Addrs) after the call
// (firstScrape).
func Start(cfg Config) (*Scraper, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("scrape: Interval must be positive")
	}
	hc, scheme, err := client(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scraper{cancel: cancel}
	for i, addr := range cfg.Addrs {
		url := scheme + "://" + addr + "/metrics"
		s.wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(firstScrape(i, len(cfg.Addrs), cfg.Interval)):
			}
			t := time.NewTicker(cfg.Interval)
			defer t.Stop()
			for {
				n, d, err := once(ctx, hc, url)
				s.record(n, d, err)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	return s, nil
}

func (s *Scraper) record(n int64, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping && err != nil {
		return // cut short by Stop, not a failure of the node
	}
	s.stats.Scrapes++
	s.stats.Bytes += n
	if err != nil {
		s.stats.Failures++
		if s.stats.FirstError == "" {
			s.stats.FirstError = err.Error()
		}
		return
	}
	s.lat = append(s.lat, d)
}

// Stop ends the loops (a scrape in flight is cut and not counted) and
// returns what they measured.
func (s *Scraper) Stop() Stats {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.P50ms, st.MaxMs = s.lat.Quantile(0.5), s.lat.Quantile(1)
	return st
}

// once GETs url and reads the whole body: its size and the time from the
// request to the last byte, or why it is not a Warden /metrics answer.
func once(ctx context.Context, hc *http.Client, url string) (int64, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	// What Prometheus asks for: the text format.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.9,*/*;q=0.1")
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(t0)
	n := int64(len(body))
	if err != nil {
		return n, d, fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return n, d, fmt.Errorf("GET %s: %s: the client certificate setup is wrong (root's certificate, with read on \"\", is what gobench presents): %s",
			url, resp.Status, bytes.TrimSpace(body))
	case resp.StatusCode != http.StatusOK:
		return n, d, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	case !bytes.Contains(body, marker):
		return n, d, fmt.Errorf("GET %s: 200 but no %s in the body: not a Warden /metrics (a build without metrics?)", url, marker)
	}
	return n, d, nil
}
