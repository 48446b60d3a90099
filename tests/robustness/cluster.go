// Package robustness is a black-box fault suite for Warden: a real
// three-node mutual-TLS cluster of the `warden` binary, clients through the
// Go client library (clients/go), a seeded nemesis (kill -9 and restart,
// SIGSTOP/SIGCONT, partitions and delays through loopback proxies, client
// pauses past their TTL, kill -9 of the fenced store), and histories checked
// for linearizability by Porcupine (github.com/anishathalye/porcupine).
// docs/verification.md describes the models and reports the runs.
package robustness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
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

// Binary is $WARDEN_BIN, else the workspace's target/debug/warden.
func Binary() (string, error) {
	b := os.Getenv("WARDEN_BIN")
	if b == "" {
		b = filepath.Join("..", "..", "target", "debug", "warden")
	}
	abs, err := filepath.Abs(b)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return "", fmt.Errorf("warden binary %s not found (set WARDEN_BIN)", abs)
	}
	return abs, nil
}

// Node is one `warden server` process.
type Node struct {
	ID        int
	Addr      string // client address (--listen)
	PeerAddr  string // its own peer port (--peer-listen)
	AdminAddr string
	DataDir   string
	CertsDir  string
	LogFile   string
	proxy     *linkProxy // in front of PeerAddr; the address every peer dials

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// Pid is the node's current process id (0 when not running).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	select {
	case <-n.exited:
		return 0
	default:
		return n.cmd.Process.Pid
	}
}

// Cluster is three nodes, their link proxies and the fenced store.
type Cluster struct {
	Bin      string
	Dir      string
	CertsDir string // ca.crt, client.root.crt/.key
	Nodes    []*Node
	Store    *FencedStore
}

// StartCluster mints certificates with the binary, starts three nodes whose
// peer links run through proxies, and waits (deadline 60 s) for a leader
// that every node follows.
func StartCluster(dir string) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin, Dir: dir}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

var (
	portsMu sync.Mutex
	ports   = map[string]bool{}
)

// freePort is a 127.0.0.1 port from :0 that this process has not handed
// out before (the kernel may give a just-closed port again).
func freePort() (string, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		if !ports[addr] {
			ports[addr] = true
			return addr, nil
		}
	}
}

func (c *Cluster) pids() map[int]int {
	m := map[int]int{}
	for _, n := range c.Nodes {
		if pid := n.Pid(); pid != 0 {
			m[n.ID] = pid
		}
	}
	return m
}

func (c *Cluster) start() error {
	for id := 1; id <= 3; id++ {
		n := &Node{ID: id, DataDir: filepath.Join(c.Dir, fmt.Sprintf("node%d", id)),
			LogFile: filepath.Join(c.Dir, fmt.Sprintf("node%d.log", id))}
		var err error
		for _, a := range []*string{&n.Addr, &n.PeerAddr, &n.AdminAddr} {
			if *a, err = freePort(); err != nil {
				return err
			}
		}
		if n.proxy, err = newLinkProxy(n.PeerAddr, c.pids); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.mintCertificates(); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := c.launch(n, "new"); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.WaitForLeader(ctx, 3)
	return err
}

func (c *Cluster) serverArgs(n *Node, state string) []string {
	var peers, peerAddrs []string
	for _, m := range c.Nodes {
		peers = append(peers, fmt.Sprintf("%d=%s", m.ID, m.Addr))
		peerAddrs = append(peerAddrs, fmt.Sprintf("%d=%s", m.ID, m.proxy.Addr()))
	}
	return []string{"server", "--id", strconv.Itoa(n.ID), "--listen", n.Addr,
		"--peer-listen", n.PeerAddr, "--peers", strings.Join(peers, ","),
		"--peer-addrs", strings.Join(peerAddrs, ","),
		"--data-dir", n.DataDir, "--initial-cluster-state", state, "--admin-listen", n.AdminAddr,
		"--certs-dir", n.CertsDir}
}

func (c *Cluster) launch(n *Node, state string) error {
	log, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.Bin, c.serverArgs(n, state)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(cliEnv(), "RUST_LOG="+nodeLogFilter())
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
	n.cmd, n.exited, n.paused = cmd, exited, false
	n.mu.Unlock()
	return nil
}

// nodeLogFilter is the nodes' RUST_LOG: $ROBUSTNESS_NODE_LOG, else info
// (which keeps h2's warn-level "remotely-reset pending-accept streams
// reached limit", the reset-flood guard a black-box check once saw, that scanLogs counts).
func nodeLogFilter() string {
	if v := os.Getenv("ROBUSTNESS_NODE_LOG"); v != "" {
		return v
	}
	return "info"
}

// run runs the warden CLI and returns its combined output.
func run(ctx context.Context, bin string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = cliEnv()
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("warden %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// cliEnv is the environment without WARDEN_* settings (but WARDEN_BIN), so
// a developer's shell never points the binary elsewhere than its flags say.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") || strings.HasPrefix(kv, "WARDEN_BIN=") {
			env = append(env, kv)
		}
	}
	return env
}

func (c *Cluster) mintCertificates() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.CertsDir = filepath.Join(c.Dir, "certs")
	caKey := filepath.Join(c.Dir, "ca.key")
	if err := os.MkdirAll(c.CertsDir, 0o700); err != nil {
		return err
	}
	if _, err := run(ctx, c.Bin, "cert", "create-ca", "--certs-dir", c.CertsDir, "--ca-key", caKey); err != nil {
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
		if _, err := run(ctx, c.Bin, "cert", "create-node", "--certs-dir", n.CertsDir, "--ca-key", caKey,
			"--id", strconv.Itoa(n.ID), "127.0.0.1", "localhost"); err != nil {
			return err
		}
	}
	_, err = run(ctx, c.Bin, "cert", "create-client", "root", "--certs-dir", c.CertsDir, "--ca-key", caKey)
	return err
}

// Endpoints are the nodes' client addresses.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.Addr)
	}
	return eps
}

// Client is a new client of every node as root over mutual TLS.
func (c *Cluster) Client(opts warden.Options) (*warden.Client, error) {
	opts.TLS = &warden.TLSOptions{CertsDir: c.CertsDir, User: "root"}
	return warden.New(c.Endpoints(), opts)
}

// NodeByID is node id (nil if none).
func (c *Cluster) NodeByID(id uint64) *Node {
	for _, n := range c.Nodes {
		if uint64(n.ID) == id {
			return n
		}
	}
	return nil
}

// WaitForLeader polls cluster status until a leader is elected and at
// least `following` members are contacted leaders or followers.
func (c *Cluster) WaitForLeader(ctx context.Context, following int) (*Node, error) {
	cl, err := c.Client(warden.Options{CallTimeout: 2 * time.Second})
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
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return nil, fmt.Errorf("no leader followed by %d members before the deadline: %v\n%s", following, last, c.LogTails())
		}
	}
}

// pause waits d unless ctx ends first (for polling, never to synchronise).
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

// Kill sends SIGKILL and waits until the process has exited.
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

// Restart starts a killed node again on its data dir and addresses.
func (c *Cluster) Restart(n *Node) error { return c.launch(n, "existing") }

// Signal sends SIGSTOP or SIGCONT to a running node.
func (c *Cluster) Signal(n *Node, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return errors.New("not started")
	}
	n.paused = sig == syscall.SIGSTOP
	return n.cmd.Process.Signal(sig)
}

// Isolate cuts every peer link between node a and every other node, both
// ways (a full partition of a from the others; clients still reach it).
func (c *Cluster) Isolate(a *Node) {
	for _, m := range c.Nodes {
		if m != a {
			a.proxy.Cut(m.ID)
			m.proxy.Cut(a.ID)
		}
	}
}

// CutOneWay cuts only the links into node a (a's messages still reach the
// others, their requests to a vanish): an asymmetric partition.
func (c *Cluster) CutOneWay(a *Node) {
	for _, m := range c.Nodes {
		if m != a {
			a.proxy.Cut(m.ID)
		}
	}
}

// Slow delays every peer link into and out of node a by d.
func (c *Cluster) Slow(a *Node, d time.Duration) {
	for _, m := range c.Nodes {
		if m != a {
			a.proxy.Delay(m.ID, d)
			m.proxy.Delay(a.ID, d)
		}
	}
}

// Heal ends every cut and delay.
func (c *Cluster) Heal() {
	for _, n := range c.Nodes {
		n.proxy.Heal()
	}
}

// Stop continues paused nodes, stops every node (SIGTERM, SIGKILL after
// 5 s), the proxies and the store.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.mu.Lock()
		cmd, exited := n.cmd, n.exited
		n.mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
			}
		}
		if n.proxy != nil {
			n.proxy.Close()
		}
	}
	if c.Store != nil {
		c.Store.Stop()
	}
}

// LogTails is the last lines of every node's log.
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
