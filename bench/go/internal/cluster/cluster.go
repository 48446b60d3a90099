// Package cluster starts and stops the three-node etcd and Warden clusters
// the Go driver measures: every node on 127.0.0.1 with ports picked free,
// data under a temp dir, timing flags as bench/src/cluster.rs passes them
// (so the Go rows and the Rust rows measure the same servers).
//
// Every spawned process id is appended to $BENCH_PIDFILE (bench/run.sh
// kills exactly those on exit), and Stop kills the cluster's own processes.
// A Warden cluster serves mutual TLS 1.3 (its default) with certificates
// minted per cluster by `warden cert`, or plaintext with Insecure; every
// Warden node also serves its HTTP endpoints (/healthz, /readyz and, from
// the build with metrics on, /metrics) on `--admin-listen` (Node.AdminAddr),
// over TLS when the cluster has certificates.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// Node is one server process.
type Node struct {
	ID         int
	ClientAddr string
	// AdminAddr is a Warden node's --admin-listen (host:port); empty for etcd.
	AdminAddr string
	Dir       string
	cmd       *exec.Cmd
}

// Pid is the node's process id (0 when it is not running).
func (n *Node) Pid() int {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Cluster is a running three-node cluster of one system.
type Cluster struct {
	// Nodes in id order.
	Nodes []*Node
	// Dir holds every node's data and logs (removed by Stop unless kept).
	Dir string
	// CertsDir is, for Warden on TLS, the client's certs dir (ca.crt,
	// client.root.crt/.key); empty otherwise.
	CertsDir string
	// Config describes the settings, as the `config` field of a row.
	Config string
	keep   bool
}

// AdminAddrs are the Warden nodes' --admin-listen addresses (host:port),
// in id order.
func (c *Cluster) AdminAddrs() []string {
	addrs := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		addrs = append(addrs, n.AdminAddr)
	}
	return addrs
}

// Endpoints are the nodes' client addresses (host:port), in id order.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		eps = append(eps, n.ClientAddr)
	}
	return eps
}

// Pids are the running nodes' process ids, in id order.
func (c *Cluster) Pids() []int {
	pids := make([]int, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		pids = append(pids, n.Pid())
	}
	return pids
}

// Stop kills every node this cluster started and waits for it; then removes
// the data unless the caller asked to keep it.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			_ = n.cmd.Process.Kill()
			_ = n.cmd.Wait()
			n.cmd = nil
		}
	}
	if !c.keep && c.Dir != "" {
		_ = os.RemoveAll(c.Dir)
	}
}

// freePorts binds n ports of 127.0.0.1:0 at once (so no two are the same)
// and releases them.
func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// RecordPid appends pid to $BENCH_PIDFILE (when set), for a process that
// is not a node (bench/node's driver).
func RecordPid(pid int) { recordPid(pid) }

func recordPid(pid int) {
	path := os.Getenv("BENCH_PIDFILE")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d\n", pid)
}

// envWithoutWarden is the environment without WARDEN_* variables, so a
// developer's shell settings never reach the processes started here.
func envWithoutWarden() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") {
			env = append(env, kv)
		}
	}
	return env
}

func (n *Node) start(program string, args []string, env []string) error {
	log, err := os.OpenFile(filepath.Join(n.Dir, "out.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(program, args...)
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = env
	// The node dies with this process, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s (node %d): %w", program, n.ID, err)
	}
	recordPid(cmd.Process.Pid)
	n.cmd = cmd
	return nil
}

// tail is the last lines of each node's log, for an error message.
func (c *Cluster) tail() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		out, _ := os.ReadFile(filepath.Join(n.Dir, "out.log"))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 5 {
			lines = lines[len(lines)-5:]
		}
		fmt.Fprintf(&b, "\n  node %d: %s", n.ID, strings.Join(lines, " | "))
	}
	return b.String()
}

// newCluster makes the temp dir and three nodes with free client ports, and
// with free admin ports too when withAdmin (all six bound at once, so none
// is another's).
func newCluster(workDir, prefix string, keep, withAdmin bool) (*Cluster, error) {
	dir, err := os.MkdirTemp(workDir, prefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, keep: keep}
	ports := 3
	if withAdmin {
		ports = 6
	}
	addrs, err := freePorts(ports)
	if err != nil {
		return nil, err
	}
	for i, a := range addrs[:3] {
		n := &Node{ID: i + 1, ClientAddr: a, Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
		if withAdmin {
			n.AdminAddr = addrs[3+i]
		}
		if err := os.MkdirAll(n.Dir, 0o700); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// EtcdConfig is the `config` label of the etcd rows (bench/src/cluster.rs's
// tuned etcd).
const EtcdConfig = "3 nodes, heartbeat 50ms, election timeout 500ms"

// StartEtcd starts three etcd members (plaintext, as the Rust drivers' etcd)
// with heartbeat 50 ms and election timeout 500 ms, and waits until one leads.
func StartEtcd(ctx context.Context, etcdBin, workDir string, keep bool, leads func(context.Context, string) bool) (*Cluster, error) {
	c, err := newCluster(workDir, "etcd-", keep, false)
	if err != nil {
		return nil, err
	}
	c.Config = EtcdConfig
	peers, err := freePorts(3)
	if err != nil {
		c.Stop()
		return nil, err
	}
	var initial []string
	for i, p := range peers {
		initial = append(initial, fmt.Sprintf("n%d=http://%s", i+1, p))
	}
	for i, n := range c.Nodes {
		args := []string{
			"--name", fmt.Sprintf("n%d", n.ID),
			"--data-dir", filepath.Join(n.Dir, "data"),
			"--listen-client-urls", "http://" + n.ClientAddr,
			"--advertise-client-urls", "http://" + n.ClientAddr,
			"--listen-peer-urls", "http://" + peers[i],
			"--initial-advertise-peer-urls", "http://" + peers[i],
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "warden-gobench",
			"--log-level", "error",
			"--logger", "zap",
			"--heartbeat-interval", "50",
			"--election-timeout", "500",
		}
		if err := n.start(etcdBin, args, os.Environ()); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.waitLeader(ctx, 60*time.Second, leads); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// WardenConfig is the `config` label of the Warden rows.
func WardenConfig(insecure bool) string {
	timing := "heartbeat 50ms, election after 500-600ms without the leader (min 200ms, max 300ms)"
	if insecure {
		return "3 nodes, --insecure (plaintext), " + timing
	}
	return "3 nodes, mutual TLS 1.3 (client root), " + timing
}

// StartWarden starts three `warden server` nodes with bench/src/cluster.rs's
// timing flags, each with an --admin-listen of its own (Node.AdminAddr), on
// mutual TLS (certificates minted here) unless insecure, and waits until one
// leads and every node's /readyz answers 200.
func StartWarden(ctx context.Context, wardenBin, workDir string, insecure, keep bool, leads func(context.Context, *Cluster, string) bool) (*Cluster, error) {
	c, err := newCluster(workDir, "warden-", keep, true)
	if err != nil {
		return nil, err
	}
	c.Config = WardenConfig(insecure)
	if !insecure {
		if err := c.mintCerts(ctx, wardenBin); err != nil {
			c.Stop()
			return nil, err
		}
	}
	var peers []string
	for _, n := range c.Nodes {
		peers = append(peers, fmt.Sprintf("%d=%s", n.ID, n.ClientAddr))
	}
	env := envWithoutWarden()
	env = append(env, "RUST_LOG=error")
	for _, n := range c.Nodes {
		args := []string{
			"server",
			"--id", strconv.Itoa(n.ID),
			"--listen", n.ClientAddr,
			"--admin-listen", n.AdminAddr,
			"--peers", strings.Join(peers, ","),
			"--data-dir", filepath.Join(n.Dir, "data"),
			"--initial-cluster-state", "new",
			"--heartbeat", "50ms",
			"--election-timeout-min", "200ms",
			"--election-timeout-max", "300ms",
		}
		if insecure {
			args = append(args, "--insecure")
		} else {
			args = append(args, "--certs-dir", filepath.Join(n.Dir, "certs"))
		}
		if err := n.start(wardenBin, args, env); err != nil {
			c.Stop()
			return nil, err
		}
	}
	probe := func(ctx context.Context, addr string) bool { return leads(ctx, c, addr) }
	if err := c.waitLeader(ctx, 60*time.Second, probe); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitReady waits until every node's /readyz answers 200 (it is part of the
// cluster, sees the leader and has applied what it knows committed; see
// crates/warden-server/src/services/health.rs): a leader alone is not
// enough, a node of a fresh cluster can join seconds later, and until then
// a workload would measure a two-node cluster. Over TLS with the CA only
// (/readyz needs no client certificate), through the Go client's TLS
// configuration, so the admin listener must present a node's certificate.
func (c *Cluster) waitReady(ctx context.Context, within time.Duration) error {
	scheme, tr := "http", &http.Transport{}
	if c.CertsDir != "" {
		cfg, err := warden.CAOnly(filepath.Join(c.CertsDir, "ca.crt")).Config()
		if err != nil {
			return err
		}
		scheme, tr.TLSClientConfig = "https", cfg
	}
	hc := &http.Client{Transport: tr, Timeout: 500 * time.Millisecond}
	defer tr.CloseIdleConnections()
	ready := make([]bool, len(c.Nodes))
	return c.poll(ctx, within, func(ctx context.Context) error {
		for i, n := range c.Nodes {
			if ready[i] {
				continue
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+n.AdminAddr+"/readyz", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return fmt.Errorf("node %d not ready (last /readyz: %w)", n.ID, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("node %d not ready (last /readyz: %s %s)", n.ID, resp.Status, bytes.TrimSpace(body))
			}
			ready[i] = true
		}
		return nil
	})
}

// mintCerts makes a CA (its key beside, never inside, a certs dir), each
// node's certificate for 127.0.0.1 and localhost in n<ID>/certs, and root's
// client certificate in the cluster's certs dir.
func (c *Cluster) mintCerts(ctx context.Context, wardenBin string) error {
	c.CertsDir = filepath.Join(c.Dir, "certs")
	caKey := filepath.Join(c.Dir, "ca.key")
	if err := os.MkdirAll(c.CertsDir, 0o700); err != nil {
		return err
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, wardenBin, append([]string{"cert"}, args...)...)
		cmd.Env = envWithoutWarden()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("warden cert %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	if err := run("create-ca", "--certs-dir", c.CertsDir, "--ca-key", caKey); err != nil {
		return err
	}
	caCert, err := os.ReadFile(filepath.Join(c.CertsDir, "ca.crt"))
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		dir := filepath.Join(n.Dir, "certs")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		// create-node reads the CA certificate from the dir it writes to.
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), caCert, 0o600); err != nil {
			return err
		}
		if err := run("create-node", "--certs-dir", dir, "--ca-key", caKey,
			"--id", strconv.Itoa(n.ID), "127.0.0.1", "localhost"); err != nil {
			return err
		}
	}
	return run("create-client", "root", "--certs-dir", c.CertsDir, "--ca-key", caKey)
}

// waitLeader waits until one node, asked by leads (500 ms each), says it
// leads.
func (c *Cluster) waitLeader(ctx context.Context, within time.Duration, leads func(context.Context, string) bool) error {
	return c.poll(ctx, within, func(ctx context.Context) error {
		for _, n := range c.Nodes {
			probe, done := context.WithTimeout(ctx, 500*time.Millisecond)
			ok := leads(probe, n.ClientAddr)
			done()
			if ok {
				return nil
			}
		}
		return errors.New("no leader")
	})
}

// poll calls probe every 50 ms until it returns nil or within has passed;
// then the error is probe's last answer (not the one the deadline cut
// short), with the time waited and every node's last log lines.
func (c *Cluster) poll(ctx context.Context, within time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w within %s; logs:%s", last, within, c.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CPUTicks is a process's utime + stime in clock ticks (USER_HZ, 100 per
// second on Linux), from /proc; 0 when it cannot be read.
func CPUTicks(pid int) uint64 {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	k, _ := strconv.ParseUint(f[12], 10, 64)
	return u + k
}
