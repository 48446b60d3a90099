// Package testcluster starts a real three-node Warden cluster from the
// `warden` binary for the conformance tests (clients/conformance/README.md):
// loopback only, ports from :0, temp dirs, mutual TLS with certificates the
// binary mints (root, alice, bob), and a loopback TCP proxy (proxy.go) for
// the scenarios that cut a client off.
package testcluster

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
	"sync"
	"syscall"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// Binary is the warden binary: $WARDEN_BIN, else the workspace's
// target/debug/warden (two folders above the module root).
func Binary() (string, error) {
	if b := os.Getenv("WARDEN_BIN"); b != "" {
		return checkBinary(b)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return checkBinary(filepath.Join(root, "..", "..", "target", "debug", "warden"))
}

func checkBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return "", fmt.Errorf("warden binary %s not found (build it with `cargo build -p warden`, or set WARDEN_BIN)", abs)
	}
	return abs, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// requireTLS fails unless bin is a server that serves mutual TLS (its
// `warden server --help` offers --certs-dir): the scenarios run on a TLS
// cluster, whose principals come from client certificates.
func requireTLS(bin string) error {
	out, err := exec.Command(bin, "server", "--help").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s server --help: %w\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), "--certs-dir") {
		return fmt.Errorf("%s predates TLS (`warden server --help` has no --certs-dir): rebuild it from this checkout (`cargo build -p warden`)", bin)
	}
	return nil
}

// Node is one `warden server` process.
type Node struct {
	ID        int
	Addr      string
	AdminAddr string
	DataDir   string
	CertsDir  string
	LogFile   string

	mu  sync.Mutex
	cmd *exec.Cmd
	// Closed when the process has exited.
	exited chan struct{}
}

// Cluster is three nodes and what they need.
type Cluster struct {
	Bin string
	Dir string
	// ca.crt and client.NAME.crt/.key for every principal of Principals.
	CertsDir string
	Nodes    []*Node
	// Extra `warden server` flags given to every node.
	extra []string
}

// SnapshotThreshold is every node's --snapshot-threshold: low, so that a
// restarted node has a snapshot and no longer retains the entries it
// covers (C09's compacted watch).
const SnapshotThreshold = 32

// Principals minted for every cluster.
var Principals = []string{"root", "alice", "bob"}

// Start starts a fresh three-node cluster on mutual TLS (certificates
// minted by the binary under a new temp dir) and waits (deadline 30 s)
// until it has a leader that every node follows.
func Start(extra ...string) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if err := requireTLS(bin); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "warden-go-conformance-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: dir, extra: extra}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (c *Cluster) start() error {
	var peers []string
	for id := 1; id <= 3; id++ {
		addr, err := freePort()
		if err != nil {
			return err
		}
		admin, err := freePort()
		if err != nil {
			return err
		}
		n := &Node{ID: id, Addr: addr, AdminAddr: admin, DataDir: filepath.Join(c.Dir, fmt.Sprintf("node%d", id)),
			LogFile: filepath.Join(c.Dir, fmt.Sprintf("node%d.log", id))}
		c.Nodes = append(c.Nodes, n)
		peers = append(peers, fmt.Sprintf("%d=%s", id, addr))
	}
	if err := c.mintCertificates(); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		args := []string{"server", "--id", strconv.Itoa(n.ID), "--listen", n.Addr, "--peers", strings.Join(peers, ","),
			"--data-dir", n.DataDir, "--initial-cluster-state", "new", "--admin-listen", n.AdminAddr,
			"--snapshot-threshold", strconv.Itoa(SnapshotThreshold)}
		if err := c.launch(n, args); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.WaitForLeader(ctx, 3)
	return err
}

func (c *Cluster) serverArgs(n *Node, args []string) []string {
	args = append(args, "--certs-dir", n.CertsDir)
	return append(args, c.extra...)
}

func (c *Cluster) launch(n *Node, args []string) error {
	log, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.Bin, c.serverArgs(n, args)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(cliEnv(), "RUST_LOG=info")
	// The node dies with the test process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	return nil
}

// Run runs the warden binary (the CLI) and returns its combined output.
func (c *Cluster) Run(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = cliEnv()
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("warden %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// cliEnv is this process's environment without the CLI's WARDEN_*
// settings (endpoints, certs dir, user, insecure), so that a developer's
// shell never points the binary elsewhere than its flags say.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") || strings.HasPrefix(kv, "WARDEN_BIN=") {
			env = append(env, kv)
		}
	}
	return env
}

// CLI runs a client command of the CLI against the cluster as principal
// user (with --endpoints, --certs-dir and --user).
func (c *Cluster) CLI(ctx context.Context, user string, args ...string) (string, error) {
	args = append(args, "--endpoints", strings.Join(c.Endpoints(), ","), "--certs-dir", c.CertsDir, "--user", user)
	return c.Run(ctx, args...)
}

func (c *Cluster) mintCertificates() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.CertsDir = filepath.Join(c.Dir, "certs")
	caKey := filepath.Join(c.Dir, "ca.key")
	if err := os.MkdirAll(c.CertsDir, 0o700); err != nil {
		return err
	}
	if _, err := c.Run(ctx, "cert", "create-ca", "--certs-dir", c.CertsDir, "--ca-key", caKey); err != nil {
		return err
	}
	caCert, err := os.ReadFile(filepath.Join(c.CertsDir, "ca.crt"))
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		n.CertsDir = filepath.Join(c.Dir, fmt.Sprintf("certs-node%d", n.ID))
		if err := os.MkdirAll(n.CertsDir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(n.CertsDir, "ca.crt"), caCert, 0o600); err != nil {
			return err
		}
		if _, err := c.Run(ctx, "cert", "create-node", "--certs-dir", n.CertsDir, "--ca-key", caKey,
			"--id", strconv.Itoa(n.ID), "127.0.0.1", "localhost"); err != nil {
			return err
		}
	}
	for _, p := range Principals {
		if _, err := c.Run(ctx, "cert", "create-client", p, "--certs-dir", c.CertsDir, "--ca-key", caKey); err != nil {
			return err
		}
	}
	return nil
}

// Endpoints are the nodes' client addresses.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.Addr)
	}
	return eps
}

// Options are client options for principal user (mutual TLS with its
// certificate).
func (c *Cluster) Options(user string) warden.Options {
	return warden.Options{TLS: &warden.TLSOptions{CertsDir: c.CertsDir, User: user}}
}

// Client is a client of every node as principal user.
func (c *Cluster) Client(user string) (*warden.Client, error) {
	return warden.New(c.Endpoints(), c.Options(user))
}

// Node is the node with this client address.
func (c *Cluster) Node(addr string) *Node {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// NodeByID is node id.
func (c *Cluster) NodeByID(id uint64) *Node {
	for _, n := range c.Nodes {
		if uint64(n.ID) == id {
			return n
		}
	}
	return nil
}

// WaitForLeader polls cluster status until a leader is elected and at
// least `following` members (the leader included) are contacted leaders or
// followers; returns the leader.
func (c *Cluster) WaitForLeader(ctx context.Context, following int) (*Node, error) {
	cl, err := c.Client("root")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var last error
	for {
		st, err := cl.ClusterStatus(ctx)
		if err == nil && st.GetLeaderId() != 0 {
			ok := 0
			for _, m := range st.GetMembers() {
				if (m.GetRole() == "leader" || m.GetRole() == "follower") && m.GetContacted() {
					ok++
				}
			}
			if ok >= following {
				if n := c.NodeByID(st.GetLeaderId()); n != nil {
					return n, nil
				}
			}
			last = fmt.Errorf("leader %d; %d of %d members follow", st.GetLeaderId(), ok, following)
		} else if err != nil {
			last = err
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return nil, fmt.Errorf("no leader followed by %d members before the deadline: %v\n%s", following, last, c.LogTails())
		}
	}
}

// pause waits d unless ctx ends first (polling between reads of a
// condition, never to synchronise).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill sends SIGKILL to the node and waits until it has exited.
func (c *Cluster) Kill(n *Node) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

// Restart starts a stopped node again on its data dir and addresses.
func (c *Cluster) Restart(n *Node) error {
	var peers []string
	for _, m := range c.Nodes {
		peers = append(peers, fmt.Sprintf("%d=%s", m.ID, m.Addr))
	}
	return c.launch(n, []string{"server", "--id", strconv.Itoa(n.ID), "--listen", n.Addr, "--peers", strings.Join(peers, ","),
		"--data-dir", n.DataDir, "--initial-cluster-state", "existing", "--admin-listen", n.AdminAddr,
		"--snapshot-threshold", strconv.Itoa(SnapshotThreshold)})
}

// WaitReady polls the node's /readyz until it answers 200 or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context, n *Node) error {
	var last error
	for {
		ok, err := c.Ready(ctx, n)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		} else {
			last = errors.New("/readyz is not 200")
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("node %d not ready before the deadline: %v\n%s", n.ID, last, c.LogTails())
		}
	}
}

// Ready asks the node's /readyz (HTTPS, no client certificate).
func (c *Cluster) Ready(ctx context.Context, n *Node) (bool, error) {
	tlsCfg, err := c.CAOnlyTLS()
	if err != nil {
		return false, err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+n.AdminAddr+"/readyz", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK, nil
}

// Stop stops every node (SIGTERM, then SIGKILL after 5 s) and removes the
// temp dir.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.mu.Lock()
		cmd, exited := n.cmd, n.exited
		n.mu.Unlock()
		if cmd == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}
	if os.Getenv("WARDEN_KEEP_TEST_DIRS") == "" {
		_ = os.RemoveAll(c.Dir)
	}
}

// LogTails is the last lines of every node's log (for failure messages).
func (c *Cluster) LogTails() string {
	var b strings.Builder
	for _, n := range c.Nodes {
		data, _ := os.ReadFile(n.LogFile)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- node %d (%s) ---\n%s\n", n.ID, n.Addr, strings.Join(lines, "\n"))
	}
	return b.String()
}
