package robustness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// linkProxy stands in front of one node's peer (Raft) port on 127.0.0.1:
// every other node dials that node through it (the node's --peer-addrs
// entry is the proxy's address). It tells which node opened a connection
// by the kernel's socket table (the connecting socket's inode, found among
// the fds of each node's process), so it can cut or delay the link from one
// source node without touching the others: a partition of node j from node
// i is a cut on j's proxy for source i and on i's proxy for source j.
//
// A cut link is a black hole, as a real partition is: the connection stays
// open and bytes are read and dropped, so the sender sees timeouts, not
// resets. Healing closes the black-holed connections so the peers redial.
type linkProxy struct {
	target string
	ln     net.Listener
	// pidOf maps node ids to their current process ids (changes on restart).
	pidOf func() map[int]int

	mu     sync.Mutex
	cut    map[int]bool
	delay  map[int]time.Duration
	conns  map[*proxied]struct{}
	closed bool
}

type proxied struct {
	src        int // source node id; 0 when not attributed
	in, out    net.Conn
	blackholed bool
	once       sync.Once
}

func (p *proxied) close() {
	p.once.Do(func() {
		p.in.Close()
		p.out.Close()
	})
}

func newLinkProxy(target string, pidOf func() map[int]int) (*linkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &linkProxy{target: target, ln: ln, pidOf: pidOf, cut: map[int]bool{}, delay: map[int]time.Duration{},
		conns: map[*proxied]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *linkProxy) Addr() string { return p.ln.Addr().String() }

// Cut black-holes the link from node src (new and open connections).
func (p *linkProxy) Cut(src int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut[src] = true
	for c := range p.conns {
		if c.src == src {
			c.blackholed = true
		}
	}
}

// Delay adds d before each chunk forwarded on the link from src (0 ends it).
func (p *linkProxy) Delay(src int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay[src] = d
}

// Heal ends every cut and delay and closes the black-holed connections.
func (p *linkProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = map[int]bool{}
	p.delay = map[int]time.Duration{}
	for c := range p.conns {
		if c.blackholed {
			c.close()
			delete(p.conns, c)
		}
	}
}

func (p *linkProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[*proxied]struct{}{}
	p.mu.Unlock()
	p.ln.Close()
	for c := range conns {
		c.close()
	}
}

func (p *linkProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(in)
	}
}

func (p *linkProxy) handle(in net.Conn) {
	src := p.attribute(in)
	out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		in.Close()
		return
	}
	c := &proxied{src: src, in: in, out: out}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	c.blackholed = p.cut[src]
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	go p.pipe(c, in, out)
	go p.pipe(c, out, in)
}

func (p *linkProxy) pipe(c *proxied, from, to net.Conn) {
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hole, d := c.blackholed, p.delay[c.src]
			p.mu.Unlock()
			if d > 0 {
				time.Sleep(d)
			}
			if !hole {
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// attribute finds the node whose process owns the connecting socket: the
// accepted connection's remote port is that socket's local port, whose
// inode /proc/net/tcp names, and a node's /proc/PID/fd links to
// socket:[inode]. 0 when no node owns it (or the node has just died).
func (p *linkProxy) attribute(in net.Conn) int {
	ra, ok := in.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return 0
	}
	la, ok := in.LocalAddr().(*net.TCPAddr)
	if !ok {
		return 0
	}
	inode := socketInode(ra.Port, la.Port)
	if inode == "" {
		return 0
	}
	want := "socket:[" + inode + "]"
	for id, pid := range p.pidOf() {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
				return id
			}
		}
	}
	return 0
}

// socketInode is the inode of the IPv4 TCP socket 127.0.0.1:localPort
// connected to 127.0.0.1:remotePort, from /proc/net/tcp.
func socketInode(localPort, remotePort int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", localPort)
	remote := fmt.Sprintf("0100007F:%04X", remotePort)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[1] != local || fields[2] != remote {
			continue
		}
		if _, err := strconv.Atoi(fields[9]); err == nil {
			return fields[9]
		}
	}
	return ""
}
