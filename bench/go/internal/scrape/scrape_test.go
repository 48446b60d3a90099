package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const body = "# TYPE warden_build_info gauge\nwarden_build_info{version=\"0.1.0\"} 1\n"

// A scrape is a Warden /metrics answer only with 200 and warden_build_info
// in the body; a 401/403 names the certificate setup, so the row that fails
// says what to fix (docs/operations.md, "Metrics": who may scrape).
func TestOnceTellsWhatIsWrong(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	mux.HandleFunc("/forbidden/metrics", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "principal lacks read on \"\"", http.StatusForbidden)
	})
	mux.HandleFunc("/other/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("go_goroutines 7\n")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	n, _, err := once(ctx, srv.Client(), srv.URL+"/ok/metrics")
	if err != nil || n != int64(len(body)) {
		t.Errorf("ok: %d bytes, %v; want %d, nil", n, err, len(body))
	}
	if _, _, err := once(ctx, srv.Client(), srv.URL+"/forbidden/metrics"); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "certificate setup") {
		t.Errorf("403: %v", err)
	}
	if _, _, err := once(ctx, srv.Client(), srv.URL+"/other/metrics"); err == nil || !strings.Contains(err.Error(), "warden_build_info") {
		t.Errorf("no marker: %v", err)
	}
	if _, _, err := once(ctx, srv.Client(), srv.URL+"/missing/metrics"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

// Check lets a few failed scrapes pass (a node's 503 while it starts) and
// fails the row beyond MaxFailures, naming the first failure.
func TestCheckAllowsAFewFailures(t *testing.T) {
	if err := (Stats{Scrapes: 30, Failures: MaxFailures}).Check(); err != nil {
		t.Errorf("%d failures: %v", MaxFailures, err)
	}
	err := Stats{Scrapes: 30, Failures: MaxFailures + 1, FirstError: "GET x: 403 Forbidden"}.Check()
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") || !strings.Contains(err.Error(), "4 of 30") {
		t.Errorf("%d failures: %v", MaxFailures+1, err)
	}
}

// A Scraper scrapes every node from Start to Stop and counts every scrape
// and every byte it read; the p50 is no more than the max.
func TestScraperCountsScrapesAndBytes(t *testing.T) {
	var hits [2]atomic.Int64
	var addrs []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			hits[i].Add(1)
			_, _ = w.Write([]byte(body))
		}))
		defer srv.Close()
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	s, err := Start(Config{Addrs: addrs, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for hits[0].Load() < 3 || hits[1].Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("within 10 s: %d and %d scrapes", hits[0].Load(), hits[1].Load())
		}
		time.Sleep(time.Millisecond)
	}
	st := s.Stop()
	served := hits[0].Load() + hits[1].Load()
	if st.Failures != 0 || st.Scrapes < 6 || int64(st.Scrapes) > served || st.Bytes != int64(st.Scrapes*len(body)) {
		t.Errorf("stats %+v after %d served", st, served)
	}
	if st.P50ms == nil || st.MaxMs == nil || *st.P50ms > *st.MaxMs {
		t.Errorf("latency p50 %v, max %v", st.P50ms, st.MaxMs)
	}
	if err := st.Check(); err != nil {
		t.Error(err)
	}
}

// The nodes' first scrapes spread evenly over one interval (as Prometheus
// spreads targets), so the cluster is not hit by a burst of one scrape per
// node at once; and node i is never scraped before its offset.
func TestFirstScrapesAreSpreadOverTheInterval(t *testing.T) {
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		if got := firstScrape(i, 3, 300*time.Millisecond); got != want {
			t.Errorf("firstScrape(%d, 3, 300ms) = %s, want %s", i, got, want)
		}
	}
	const interval = 400 * time.Millisecond
	var first [2]atomic.Int64 // unix nanoseconds of each node's first scrape
	var addrs []string
	for i := range first {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			first[i].CompareAndSwap(0, time.Now().UnixNano())
			_, _ = w.Write([]byte(body))
		}))
		defer srv.Close()
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	start := time.Now()
	s, err := Start(Config{Addrs: addrs, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for first[0].Load() == 0 || first[1].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("within 10 s, not every node was scraped")
		}
		time.Sleep(time.Millisecond)
	}
	s.Stop()
	at := func(i int) time.Duration { return time.Duration(first[i].Load() - start.UnixNano()) }
	if at(1) < interval/2 {
		t.Errorf("node 1 first scraped %s after Start, before its offset %s", at(1), interval/2)
	}
	if at(0) >= at(1) {
		t.Errorf("node 0 first scraped at %s, not before node 1 (%s)", at(0), at(1))
	}
}
