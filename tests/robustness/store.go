package robustness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FencedStore is one `warden fenced-store` process (docs/fencing.md "The
// reference fenced store"): PUT /kv/KEY with warden-resource and
// warden-fencing-token headers, accepted (200) unless the token is below
// the highest it accepted for the resource (409).
type FencedStore struct {
	Bin     string
	Addr    string
	DataDir string
	LogFile string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	http   *http.Client
}

// StartFencedStore starts the store on 127.0.0.1 with a port from :0 (kept
// for its restarts) and its own data dir under dir.
func StartFencedStore(bin, dir string) (*FencedStore, error) {
	s := &FencedStore{Bin: bin, DataDir: filepath.Join(dir, "store"), LogFile: filepath.Join(dir, "store.log"),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if err := s.launch("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *FencedStore) launch(listen string) error {
	log, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.Bin, "fenced-store", "--listen", listen, "--data-dir", s.DataDir)
	cmd.Stderr = log
	cmd.Env = cliEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		if first {
			close(lines)
		}
	}()
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	select {
	case line, ok := <-lines:
		const prefix = "fenced-store listening on "
		if !ok || !strings.HasPrefix(line, prefix) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("fenced-store did not say where it listens (first line %q)", line)
		}
		s.mu.Lock()
		s.Addr = strings.TrimSpace(strings.TrimPrefix(line, prefix))
		s.cmd, s.exited = cmd, exited
		s.mu.Unlock()
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return errors.New("fenced-store did not start within 30 s")
	}
}

// Kill kills the store with SIGKILL and waits for it to exit.
func (s *FencedStore) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// Restart starts the store again on the same address and data dir.
func (s *FencedStore) Restart() error {
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	var err error
	// The port may sit in TIME_WAIT for a moment; retry within a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err = s.launch(addr); err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills the store.
func (s *FencedStore) Stop() { s.Kill() }

// WriteResult is a definite answer of the store to a write.
type WriteResult struct {
	Accepted bool
	Highest  uint64 // with a refusal: the highest token the store names
}

// Write PUTs value under key, fenced by (resource, token). A non-nil error
// means the outcome is unknown (no HTTP answer, or one we cannot read).
// A slot >= 0 sends warden-slot: the write is fenced by the permit rule
// (per resource and slot) instead of the mutex rule.
func (s *FencedStore) Write(ctx context.Context, key, resource string, token uint64, slot int, value string) (WriteResult, error) {
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+"/kv/"+key, strings.NewReader(value))
	if err != nil {
		return WriteResult{}, err
	}
	req.Header.Set("warden-resource", resource)
	req.Header.Set("warden-fencing-token", strconv.FormatUint(token, 10))
	if slot >= 0 {
		req.Header.Set("warden-slot", strconv.Itoa(slot))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return WriteResult{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return WriteResult{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return WriteResult{Accepted: true}, nil
	case http.StatusConflict:
		var r struct {
			Error   string `json:"error"`
			Highest uint64 `json:"highest"`
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Error != "stale token" {
			return WriteResult{}, fmt.Errorf("store answered 409 %s", body)
		}
		return WriteResult{Highest: r.Highest}, nil
	default:
		return WriteResult{}, fmt.Errorf("store answered %d %s", resp.StatusCode, body)
	}
}

// Read GETs key: its value and whether it exists. An error means unknown.
func (s *FencedStore) Read(ctx context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	addr := s.Addr
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/kv/"+key, nil)
	if err != nil {
		return "", false, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return string(body), true, nil
	case http.StatusNotFound:
		return "", false, nil
	default:
		return "", false, fmt.Errorf("store answered %d %s", resp.StatusCode, body)
	}
}
