package testcluster

import (
	"net"
	"sync"
)

// Proxy is a loopback TCP proxy in front of one node. It forwards both
// ways until told otherwise:
//   - Cut: stop forwarding in both directions, close the client side's
//     sockets, and close every later connection at once;
//   - SwallowReplies: keep forwarding client→node but drop node→client;
//     Resume closes every connection that lost bytes (its HTTP/2 framing is
//     broken) and forwards again.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	cut       bool
	swallow   bool
	accepted  int
	swallowed int
	pairs     map[*pair]struct{}
	// Connections that lost reply bytes.
	dirty map[*pair]struct{}
}

type pair struct{ client, node net.Conn }

func (p *pair) close() {
	p.client.Close()
	p.node.Close()
}

// NewProxy listens on 127.0.0.1:0 and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, pairs: map[*pair]struct{}{}, dirty: map[*pair]struct{}{}}
	go p.serve()
	return p, nil
}

// Addr is the proxy's address (the client's endpoint).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted is how many connections the proxy accepted.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Swallowed is how many node→client reads were dropped.
func (p *Proxy) Swallowed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.swallowed
}

// Cut cuts every client off, now and later.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	pairs := p.pairs
	p.pairs = map[*pair]struct{}{}
	p.mu.Unlock()
	for pr := range pairs {
		pr.close()
	}
}

// SwallowReplies drops every node→client byte from now on, on every
// connection, until Resume.
func (p *Proxy) SwallowReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.swallow = true
}

// Resume closes the connections that lost reply bytes and forwards again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.swallow = false
	dirty := p.dirty
	p.dirty = map[*pair]struct{}{}
	for pr := range dirty {
		delete(p.pairs, pr)
	}
	p.mu.Unlock()
	for pr := range dirty {
		pr.close()
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
}

func (p *Proxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		cut := p.cut
		p.mu.Unlock()
		if cut {
			conn.Close()
			continue
		}
		node, err := net.Dial("tcp", p.target)
		if err != nil {
			conn.Close()
			continue
		}
		pr := &pair{client: conn, node: node}
		p.mu.Lock()
		p.pairs[pr] = struct{}{}
		p.mu.Unlock()
		go p.pipe(pr, conn, node, false)
		go p.pipe(pr, node, conn, true)
	}
}

func (p *Proxy) pipe(pr *pair, from, to net.Conn, reply bool) {
	defer pr.close()
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			_, live := p.pairs[pr]
			drop := reply && p.swallow
			if drop {
				p.swallowed++
				p.dirty[pr] = struct{}{}
			}
			p.mu.Unlock()
			if !live {
				return
			}
			if !drop {
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			// EOF or a closed socket: the pair is done.
			return
		}
	}
}
