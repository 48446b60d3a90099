package robustness

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// leaderSeenBy asks each of the given nodes directly (no leader following)
// until all of them name one leader other than `not`, or fails at ctx's end.
func leaderSeenBy(ctx context.Context, t *testing.T, c *Cluster, nodes []*Node, not int) *Node {
	t.Helper()
	cfg, err := clientTLS(c.CertsDir)
	if err != nil {
		t.Fatal(err)
	}
	var views map[int]uint64
	var errs map[int]string
	for {
		views, errs = map[int]uint64{}, map[int]string{}
		for _, n := range nodes {
			conn, err := grpc.NewClient(n.Addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
			if err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			st, err := wardenpb.NewLockClient(conn).ClusterStatus(cctx, &wardenpb.ClusterStatusRequest{})
			cancel()
			conn.Close()
			if err == nil {
				views[n.ID] = st.GetLeaderId()
			} else if g := notLeaderRe.FindStringSubmatch(status.Convert(err).Message()); g != nil {
				// A follower answers "not the leader; the leader is node N".
				id, _ := strconv.ParseUint(g[1], 10, 64)
				views[n.ID] = id
			} else {
				errs[n.ID] = err.Error()
			}
		}
		agreed := uint64(0)
		for _, n := range nodes {
			if l, ok := views[n.ID]; !ok || l == 0 || int(l) == not || (agreed != 0 && l != agreed) {
				agreed = 0
				break
			} else {
				agreed = l
			}
		}
		if agreed != 0 {
			return c.NodeByID(agreed)
		}
		if pause(ctx, 100*time.Millisecond) != nil {
			t.Fatalf("no new leader seen by every node of %d before the deadline (views %v, errors %v)\n%s", len(nodes), views, errs, c.LogTails())
		}
	}
}

func others(c *Cluster, n *Node) []*Node {
	var out []*Node
	for _, m := range c.Nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// TestNemesisFaultsAreReal defends the nemesis itself: a partition through
// the link proxies (which attribute each peer connection to its node by the
// kernel's socket table) really cuts the leader off, since the other two
// elect a new one; a SIGSTOPped leader is replaced too; after healing, all
// three follow one leader again; and the monitor's probes reach every node.
func TestNemesisFaultsAreReal(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "warden-robustness-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := StartCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	old, err := c.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Isolate(old)
	next := leaderSeenBy(ctx, t, c, others(c, old), old.ID)
	if next == old {
		t.Fatalf("node %d still leads while isolated", old.ID)
	}
	c.Heal()
	if _, err := c.WaitForLeader(ctx, 3); err != nil {
		t.Fatal(err)
	}

	lead, err := c.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(lead, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	after := leaderSeenBy(ctx, t, c, others(c, lead), lead.ID)
	if err := c.Signal(lead, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if after == lead {
		t.Fatalf("node %d still leads while stopped", lead.ID)
	}
	if _, err := c.WaitForLeader(ctx, 3); err != nil {
		t.Fatal(err)
	}

	rec := NewRecorder()
	mon := &monitor{c: c, rec: rec, findings: map[string]*Finding{}}
	mctx, mcancel := context.WithTimeout(ctx, time.Second)
	mon.run(mctx)
	mcancel()
	if mon.probes < 6 {
		t.Fatalf("the monitor made %d probes in 1 s over 3 nodes, want at least 6", mon.probes)
	}
	for _, f := range mon.list() {
		if f.Kind == "monitor-error" {
			t.Fatalf("monitor: %s", f.Text)
		}
	}
}
