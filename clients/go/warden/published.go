package warden

import (
	"context"
	"sync"
	"time"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// DefaultElectionPrefix is the key prefix of every election when the
// server does not publish one (ClusterStatusResponse.election_prefix):
// U+0001, which no lock name may contain, then "election/".
const DefaultElectionPrefix = "\x01election/"

// publishedSettings are what the server publishes in ClusterStatus so that
// no client hard-codes them: the in-flight window
// (max_requests_in_flight, the server's per-client outcome cap) and the
// election key prefix (election_prefix). A server that sends 0 / "" (one
// that predates them) leaves the defaults in place.
type publishedSettings struct {
	mu             sync.Mutex
	loaded         bool
	lastTry        time.Time
	electionPrefix string
}

// publishedRetry is how long after a failed read the client tries again.
const publishedRetry = 10 * time.Second

// loadPublished reads the published settings once (best effort: a failure
// keeps the defaults and is tried again later).
func (c *Client) loadPublished(ctx context.Context) {
	p := &c.published
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded {
		return
	}
	if !p.lastTry.IsZero() && time.Since(p.lastTry) < publishedRetry {
		return
	}
	p.lastTry = time.Now()
	reply, err := c.clusterStatus(ctx, c.opts.CallTimeout)
	if err != nil {
		return
	}
	c.applyPublished(reply)
}

// applyPublished takes the settings from a ClusterStatus reply (with
// c.published.mu held).
func (c *Client) applyPublished(reply *wardenpb.ClusterStatusResponse) {
	c.ids.setWindow(reply.GetMaxRequestsInFlight())
	if v := reply.GetElectionPrefix(); v != "" {
		c.published.electionPrefix = v
	}
	c.published.loaded = true
}

// electionPrefix is the published election key prefix, or the default.
func (c *Client) electionPrefix(ctx context.Context) string {
	c.loadPublished(ctx)
	c.published.mu.Lock()
	defer c.published.mu.Unlock()
	if c.published.electionPrefix != "" {
		return c.published.electionPrefix
	}
	return DefaultElectionPrefix
}
