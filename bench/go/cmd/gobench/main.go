// Command gobench measures etcd through its own Go client's lock
// (clientv3/concurrency: NewSession + NewMutex(...).Lock/Unlock) beside
// Warden through its Go client (clients/go: Session.Lock + Guard.Release),
// on the uncontended, parallel (64 clients) and contended workloads of
// loadgen (bench/src/workload.rs), with the same sizes.
//
// Backends (--backends, in the order given):
//
//   - etcd-go-concurrency: etcd, three members, plaintext.
//   - warden-go: Warden from --warden-bin, mutual TLS 1.3 as root.
//   - warden-go-insecure: the same with --insecure and a plaintext client.
//   - warden-go-scraped: exactly warden-go, plus a reader of every node's
//     /metrics once per --scrape-interval (1 s) over HTTPS with root's client
//     certificate, the whole body read, the nodes' scrapes spread over the
//     interval, as Prometheus would (internal/scrape; it runs in gobench's
//     own process, beside the load, on the same cores); the row records the scrapes (scrapes,
//     scrape_failures, scrape_bytes, scrape_p50_ms, scrape_max_ms), and
//     more than scrape.MaxFailures failed scrapes fail the row and the run.
//   - warden-go-before: exactly warden-go, its cluster started from the
//     build given by --warden-bin-before (e.g. one from before a change),
//     never scraped.
//   - warden-node (with --node-driver): Warden through its Node client
//     (clients/node), measured by bench/node's driver on warden-go's own
//     cluster, beside the Go client: for the uncontended and parallel
//     workloads, right after (odd rounds) or right before (even rounds) the
//     warden-go row of the same workload, before the cluster stops. It is
//     not a backend of its own: it runs wherever warden-go does.
//
// The table printed at the end gives each row, the medians over the rounds
// with their min–max, Warden ÷ etcd, and when those backends ran, the
// ratios warden-go-scraped ÷ warden-go (what being scraped costs) and
// warden-go ÷ warden-go-before (what the change between the builds costs),
// with the leader's CPU per cycle, and warden-node ÷ warden-go (the Node
// client against the Go client, with each client's own CPU per cycle); a ratio is the median of the
// round-by-round ratios (internal/report), the ratio of the medians beside
// it.
//
//	go run ./cmd/gobench --warden-bin ../../target/release/warden            # full sizes
//	go run ./cmd/gobench --quick                                             # smoke run, under 2 minutes
//	go run ./cmd/gobench --smoke --warden-bin ../../target/debug/warden      # tiny sizes: checks the drivers, measures nothing
//	go run ./cmd/gobench --backends warden-go --workloads uncontended,parallel \
//	    --node-driver ../node/nodebench.mjs --rounds 3                      # Node client beside Go client
//	go run ./cmd/gobench --etcd-endpoints A,B,C --warden-endpoints D,E,F --warden-certs-dir DIR
//	go run ./cmd/gobench --backends warden-go-before,warden-go,warden-go-scraped \
//	    --warden-bin-before /path/to/old/warden --workloads uncontended,parallel --rounds 5
//
// Unless given endpoints, it starts each cluster itself (three nodes on
// 127.0.0.1, ports from :0 for the client port and --admin-listen, data in
// a temp dir under --work-dir; see internal/cluster) and stops it before the
// next backend; every process id goes to $BENCH_PIDFILE as it is spawned.
// With --rounds N it runs the backends N times, in the order given and then
// reversed, alternately (A B C, C B A, A B C, ...), so a drift of the
// machine over the run falls on every backend alike; each row carries its
// round. Every workload's client (gobench's own goroutines, or the Node
// driver's process) has its CPU time per cycle in the row
// (client_cpu_ms_per_op: user+system, connects and warm-up included). It writes --out (JSON rows in the shape of loadgen's latest.json)
// after every row, and a markdown table to stdout at the end;
// $WARDEN_COMMIT and $WARDEN_COMMIT_BEFORE (the commits of --warden-bin and
// --warden-bin-before, when the caller says) go into machine, with each
// binary's sha256 and the run's start and end (date_utc, date_utc_end).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/warden-locks/warden/bench/go/internal/cluster"
	"github.com/warden-locks/warden/bench/go/internal/lockers"
	"github.com/warden-locks/warden/bench/go/internal/report"
	"github.com/warden-locks/warden/bench/go/internal/scrape"
	"github.com/warden-locks/warden/bench/go/internal/workload"
	"github.com/warden-locks/warden/clients/go/warden"
)

var (
	allBackends = []string{"etcd-go-concurrency", "warden-go", "warden-go-insecure", "warden-go-scraped", "warden-go-before"}
	// defaultBackends are bench/run.sh's: etcd beside Warden both ways.
	defaultBackends = allBackends[:3]
	allWorkloads    = []string{"uncontended", "parallel", "contended"}
	// nodeWorkloads are the workloads bench/node's driver runs.
	nodeWorkloads = []string{"uncontended", "parallel"}
)

// nodeBackend is the rows of the Node driver, run on warden-go's cluster.
const nodeBackend = "warden-node"

type flags struct {
	quick           bool
	smoke           bool
	nodeDriver      string
	nodeBin         string
	out             string
	wardenBin       string
	wardenBinBefore string
	rounds          int
	scrapeInterval  time.Duration
	etcdBin         string
	workDir         string
	backends        []string
	workloads       []string
	etcdEndpoints   []string
	wardenEndpoints []string
	wardenCertsDir  string
	loadNote        string
	keepDirs        bool
}

func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func parseFlags() (flags, error) {
	var f flags
	var backends, workloads, etcdEps, wardenEps string
	flag.BoolVar(&f.quick, "quick", false, "smoke run: loadgen's --quick sizes (under 2 minutes)")
	flag.BoolVar(&f.smoke, "smoke", false, "tiny sizes (20 uncontended cycles, 4 clients for 1 s, 2 on one resource for 1 s): checks the drivers end to end, e.g. on a debug build; measures nothing")
	flag.StringVar(&f.nodeDriver, "node-driver", "", "bench/node's nodebench.mjs: also measure Warden through the Node client on warden-go's cluster (backend warden-node; uncontended and parallel)")
	flag.StringVar(&f.nodeBin, "node-bin", "node", "the node binary that runs --node-driver")
	flag.StringVar(&f.out, "out", "../results/latest-go.json", "results file (JSON); written after every row")
	flag.StringVar(&f.wardenBin, "warden-bin", "../../target/release/warden", "the warden binary (starts the Warden clusters and mints their certificates)")
	flag.StringVar(&f.wardenBinBefore, "warden-bin-before", "", "the warden binary backend warden-go-before runs (e.g. a build from before a change; its /metrics is never read)")
	flag.IntVar(&f.rounds, "rounds", 1, "run the backends this many times, alternately in the order given and reversed")
	flag.DurationVar(&f.scrapeInterval, "scrape-interval", time.Second, "warden-go-scraped: how often each node's /metrics is read")
	flag.StringVar(&f.etcdBin, "etcd-bin", "etcd", "the etcd binary")
	flag.StringVar(&f.workDir, "work-dir", "/var/tmp", "where the clusters' temp dirs go (the real disk: fsync matters)")
	flag.StringVar(&backends, "backends", strings.Join(defaultBackends, ","), "comma-separated, any of: "+strings.Join(allBackends, ", "))
	flag.StringVar(&workloads, "workloads", strings.Join(allWorkloads, ","), "comma-separated: "+strings.Join(allWorkloads, ", "))
	flag.StringVar(&etcdEps, "etcd-endpoints", "", "measure this running etcd cluster (host:port,...) instead of starting one")
	flag.StringVar(&wardenEps, "warden-endpoints", "", "measure this running Warden cluster (host:port,...) as warden-go instead of starting one")
	flag.StringVar(&f.wardenCertsDir, "warden-certs-dir", "", "with --warden-endpoints: certs dir with ca.crt and client.root.crt/.key (empty: plaintext)")
	flag.StringVar(&f.loadNote, "load-note", "", "recorded as machine.load_note")
	flag.BoolVar(&f.keepDirs, "keep-dirs", false, "keep the clusters' data and logs")
	flag.Parse()
	if flag.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	f.backends, f.workloads = list(backends), list(workloads)
	f.etcdEndpoints, f.wardenEndpoints = list(etcdEps), list(wardenEps)
	for _, b := range f.backends {
		if !slices.Contains(allBackends, b) {
			return f, fmt.Errorf("--backends: unknown backend %q (known: %s)", b, strings.Join(allBackends, ", "))
		}
	}
	for _, w := range f.workloads {
		if !slices.Contains(allWorkloads, w) {
			return f, fmt.Errorf("--workloads: unknown workload %q (known: %s)", w, strings.Join(allWorkloads, ", "))
		}
	}
	if f.quick && f.smoke {
		return f, errors.New("--quick and --smoke: pick one")
	}
	if f.nodeDriver != "" && !slices.Contains(f.backends, "warden-go") {
		return f, errors.New("--node-driver runs on warden-go's cluster: --backends must include warden-go")
	}
	if f.rounds < 1 {
		return f, fmt.Errorf("--rounds: %d; at least 1", f.rounds)
	}
	if f.scrapeInterval <= 0 {
		return f, fmt.Errorf("--scrape-interval: %s; must be positive", f.scrapeInterval)
	}
	if slices.Contains(f.backends, "warden-go-before") && f.wardenBinBefore == "" {
		return f, errors.New("--backends warden-go-before needs --warden-bin-before PATH (the build to compare with)")
	}
	if f.wardenCertsDir != "" && len(f.wardenEndpoints) == 0 {
		return f, errors.New("--warden-certs-dir needs --warden-endpoints")
	}
	return f, nil
}

func main() {
	f, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, f)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench:", err)
		os.Exit(1)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return ""
	}
	return strings.Join(fields[:3], " ")
}

func commandLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range info.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return ""
}

func machine(f flags, p workload.Params) map[string]any {
	mode := "full"
	if f.quick {
		mode = "quick"
	}
	if f.smoke {
		mode = "smoke"
	}
	nodeVersion := ""
	if f.nodeDriver != "" {
		nodeVersion = commandLine(f.nodeBin, "--version")
	}
	return map[string]any{
		"driver":        "bench/go gobench",
		"date_utc":      time.Now().UTC().Format(time.RFC3339),
		"cores":         runtime.NumCPU(),
		"loadavg_start": loadavg(),
		"load_note":     f.loadNote,
		"mode":          mode,
		"warden_commit": os.Getenv("WARDEN_COMMIT"),
		// The commit --warden-bin-before was built from, when the caller says.
		"warden_commit_before": os.Getenv("WARDEN_COMMIT_BEFORE"),
		"versions": map[string]any{
			"go":             runtime.Version(),
			"etcd":           commandLine(f.etcdBin, "--version"),
			"etcd_client_v3": moduleVersion("go.etcd.io/etcd/client/v3"),
			"warden":         commandLine(f.wardenBin, "--version"),
			"warden_before":  commandLine(f.wardenBinBefore, "--version"),
			"node":           nodeVersion,
		},
		// bench/node's driver, when --node-driver was given ("" otherwise).
		"node_driver":       f.nodeDriver,
		"warden_bin":        f.wardenBin,
		"warden_bin_before": f.wardenBinBefore,
		// The binaries themselves, so a row can be matched to a build
		// whatever the caller says of its commit ("" when unreadable).
		"warden_bin_sha256":        fileSHA256(f.wardenBin),
		"warden_bin_before_sha256": fileSHA256(f.wardenBinBefore),
		"params": map[string]any{
			"uncontended_iterations": p.Iterations,
			"uncontended_warmup":     p.Warmup,
			"parallel_clients":       p.ParallelClients,
			"parallel_s":             p.ParallelSeconds,
			"contended_clients":      p.ContendedClients,
			"contended_s":            p.ContendedSeconds,
			"session_ttl_s":          int(lockers.TTL / time.Second),
			"rounds":                 f.rounds,
			"scrape_interval_s":      f.scrapeInterval.Seconds(),
		},
	}
}

// fileSHA256 is the hex sha256 of the file at path; "" when there is none
// or it cannot be read.
func fileSHA256(path string) string {
	if path == "" {
		return ""
	}
	fd, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fd.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fd); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// debugInfo reports whether the binary carries DWARF debug info: the
// workspace's release profile leaves it out and its dev profile puts it in,
// so a Warden binary with it is (almost surely) unoptimised, and its rows say
// little about the server.
func debugInfo(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".debug_info") != nil
}

// etcdLeads: the member at addr says it is the leader.
func etcdLeads(ctx context.Context, addr string) bool {
	cli, err := clientv3.New(lockers.EtcdConfig(ctx, []string{addr}))
	if err != nil {
		return false
	}
	defer cli.Close()
	s, err := cli.Status(ctx, addr)
	return err == nil && s.Leader != 0 && s.Header != nil && s.Header.MemberId == s.Leader
}

// wardenLeads: the node at addr answers ClusterStatus naming itself leader.
func wardenLeads(ctx context.Context, c *cluster.Cluster, addr string) bool {
	opts := lockers.WardenOptions(c.CertsDir)
	opts.CallTimeout, opts.AttemptTimeout = 400*time.Millisecond, 300*time.Millisecond
	cl, err := warden.New([]string{addr}, opts)
	if err != nil {
		return false
	}
	defer cl.Close()
	s, err := cl.ClusterStatus(ctx)
	return err == nil && s.LeaderId != 0 && s.LeaderId == s.NodeId
}

// prepared is a backend's target, and the cluster behind it when started here.
type prepared struct {
	target  lockers.Target
	config  string
	cluster *cluster.Cluster
	// scrape, for warden-go-scraped: read these /metrics during each workload.
	scrape *scrape.Config
}

func prepare(ctx context.Context, f flags, backend string) (prepared, error) {
	switch backend {
	case "etcd-go-concurrency":
		if len(f.etcdEndpoints) > 0 {
			return prepared{target: lockers.Target{Backend: backend, Endpoints: f.etcdEndpoints}, config: "given endpoints"}, nil
		}
		c, err := cluster.StartEtcd(ctx, f.etcdBin, f.workDir, f.keepDirs, etcdLeads)
		if err != nil {
			return prepared{}, fmt.Errorf("start etcd: %w", err)
		}
		return prepared{target: lockers.Target{Backend: backend, Endpoints: c.Endpoints()}, config: c.Config, cluster: c}, nil
	default:
		insecure := backend == "warden-go-insecure"
		if len(f.wardenEndpoints) > 0 && backend == "warden-go" {
			return prepared{target: lockers.Target{Backend: backend, Endpoints: f.wardenEndpoints, CertsDir: f.wardenCertsDir}, config: "given endpoints"}, nil
		}
		bin, config := f.wardenBin, ""
		switch backend {
		case "warden-go-before":
			bin, config = f.wardenBinBefore, ", the build of --warden-bin-before"
		case "warden-go-scraped":
			config = fmt.Sprintf(", every node's /metrics read every %s", f.scrapeInterval)
		}
		c, err := cluster.StartWarden(ctx, bin, f.workDir, insecure, f.keepDirs, wardenLeads)
		if err != nil {
			return prepared{}, fmt.Errorf("start warden: %w", err)
		}
		pr := prepared{target: lockers.Target{Backend: backend, Endpoints: c.Endpoints(), CertsDir: c.CertsDir}, config: c.Config + config, cluster: c}
		if backend == "warden-go-scraped" {
			pr.scrape = &scrape.Config{Addrs: c.AdminAddrs(), CertsDir: c.CertsDir, Interval: f.scrapeInterval}
		}
		return pr, nil
	}
}

func failedRow(w, backend, config string, err error) workload.Row {
	return workload.Row{Workload: w, Backend: backend, Config: config, Safe: true, Errors: 1,
		Extra: map[string]any{"failed": err.Error()}}
}

func fmtMS(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

func run(ctx context.Context, f flags) error {
	p := workload.Full()
	if f.quick {
		p = workload.Quick()
	}
	if f.smoke {
		p = workload.Smoke()
	}
	if f.nodeDriver != "" {
		abs, err := checkNodeDriver(f.nodeDriver)
		if err != nil {
			return err
		}
		f.nodeDriver = abs
	}
	if len(f.wardenEndpoints) == 0 && slices.ContainsFunc(f.backends, func(b string) bool { return strings.HasPrefix(b, "warden") }) {
		abs, err := filepath.Abs(f.wardenBin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("--warden-bin: %w (build it: cargo build --release -p warden --bin warden)", err)
		}
		f.wardenBin = abs
	}
	if slices.Contains(f.backends, "warden-go-before") {
		abs, err := filepath.Abs(f.wardenBinBefore)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("--warden-bin-before: %w", err)
		}
		f.wardenBinBefore = abs
	}
	started := time.Now()
	res := report.Results{Machine: machine(f, p)}
	warnDebug := func(key, bin string) {
		if bin == "" || !debugInfo(bin) {
			return
		}
		fmt.Fprintf(os.Stderr, "gobench: warning: %s has debug info, so it is likely a debug build (unoptimised): Warden's rows will not be representative; build one with cargo build --release -p warden --bin warden\n", bin)
		res.Machine[key] = "debug info present: likely an unoptimised debug build"
	}
	if len(f.wardenEndpoints) == 0 {
		warnDebug("warden_bin_warning", f.wardenBin)
	}
	warnDebug("warden_bin_before_warning", f.wardenBinBefore)
	var scrapeFailed []string
	for round := 1; round <= f.rounds && ctx.Err() == nil; round++ {
		order := slices.Clone(f.backends)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, b := range order {
			if ctx.Err() != nil {
				break
			}
			if len(f.wardenEndpoints) > 0 && strings.HasPrefix(b, "warden-go-") {
				fmt.Fprintf(os.Stderr, "== %s: skipped (--warden-endpoints given; it needs a cluster started here)\n", b)
				continue
			}
			fmt.Fprintf(os.Stderr, "== %s (round %d of %d)\n", b, round, f.rounds)
			pr, err := prepare(ctx, f, b)
			if err != nil {
				for _, w := range f.workloads {
					row := failedRow(w, b, "", err)
					row.Extra["round"] = round
					res.Runs = append(res.Runs, row)
				}
				fmt.Fprintf(os.Stderr, "   %v\n", err)
				if werr := report.WriteJSON(f.out, res); werr != nil {
					return werr
				}
				continue
			}
			for _, w := range f.workloads {
				// The Node driver on the same cluster, beside the Go client:
				// after it in odd rounds, before it in even ones.
				drivers := []string{"go"}
				if f.nodeDriver != "" && b == "warden-go" && slices.Contains(nodeWorkloads, w) {
					drivers = append(drivers, "node")
					if round%2 == 0 {
						slices.Reverse(drivers)
					}
				}
				for _, d := range drivers {
					if ctx.Err() != nil {
						break
					}
					var row workload.Row
					if d == "node" {
						row = measure(ctx, pr, w, nodeBackend, func(ctx context.Context) (workload.Row, error) {
							return runNode(ctx, f, pr, w, p)
						})
					} else {
						row = measure(ctx, pr, w, pr.target.Backend, func(ctx context.Context) (workload.Row, error) {
							return runGo(ctx, pr, w, p)
						})
					}
					row.Extra["round"] = round
					if msg, ok := row.Extra["scrape_failed"]; ok {
						scrapeFailed = append(scrapeFailed, fmt.Sprintf("%s round %d: %v", w, round, msg))
					}
					res.Runs = append(res.Runs, row)
					if err := report.WriteJSON(f.out, res); err != nil {
						pr.stop()
						return err
					}
				}
			}
			pr.stop()
		}
	}
	res.Machine["wall_s"] = int(time.Since(started).Seconds())
	res.Machine["date_utc_end"] = time.Now().UTC().Format(time.RFC3339)
	res.Machine["loadavg_end"] = loadavg()
	if err := report.WriteJSON(f.out, res); err != nil {
		return err
	}
	fmt.Print(report.Markdown(res))
	fmt.Fprintf(os.Stderr, "wrote %s in %.0f s\n", f.out, time.Since(started).Seconds())
	if len(scrapeFailed) > 0 {
		return fmt.Errorf("warden-go-scraped: the scrapes failed (those rows are marked failed):\n  %s", strings.Join(scrapeFailed, "\n  "))
	}
	return ctx.Err()
}

func (pr prepared) stop() {
	if pr.cluster != nil {
		pr.cluster.Stop()
	}
}

// measure runs one workload (at most 300 s) and adds the servers' CPU time
// per operation (warm-up included, each node) and the load average; for
// warden-go-scraped, with every node's /metrics read throughout (from just
// after the CPU baseline is read: clients' connects and warm-up included;
// the nodes' scrapes spread over the interval, by this process, on the
// cores the load and the servers share), and the scrapes' stats in the row,
// which fails when too many scrapes did (scrape.Stats.Check).
func measure(ctx context.Context, pr prepared, w, backend string, run func(context.Context) (workload.Row, error)) workload.Row {
	t0 := time.Now()
	ownCPU0 := ownCPU()
	var pids []int
	var before []uint64
	if pr.cluster != nil {
		pids = pr.cluster.Pids()
		for _, pid := range pids {
			before = append(before, cluster.CPUTicks(pid))
		}
	}
	// After the CPU baseline, so every scrape's cost falls inside the row.
	var scraper *scrape.Scraper
	if pr.scrape != nil {
		var err error
		if scraper, err = scrape.Start(*pr.scrape); err != nil {
			row := failedRow(w, backend, pr.config, err)
			row.Extra["scrape_failed"] = err.Error()
			return row
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Second)
	defer cancel()
	row, err := run(wctx)
	ownCPUms := ownCPU() - ownCPU0
	var scrapes *scrape.Stats
	var scrapeErr error
	if scraper != nil {
		st := scraper.Stop()
		scrapes, scrapeErr = &st, st.Check()
		if err == nil {
			err = scrapeErr
		}
	}
	nOps := row.Count
	if v, ok := row.Extra["ops_total"].(int); ok {
		nOps = v
	}
	if err == nil && backend != nodeBackend && nOps > 0 {
		// The Go client's CPU is this process's (the Node driver reports its own).
		row.Extra["client_cpu_ms_per_op"] = float64(int(ownCPUms/float64(nOps)*1000+0.5)) / 1000
	}
	if err != nil {
		row = failedRow(w, backend, pr.config, err)
	} else if pids != nil {
		if ops := nOps; ops > 0 {
			perOp := make([]float64, len(pids))
			for i, pid := range pids {
				ms := float64(cluster.CPUTicks(pid)-before[i]) * 10
				perOp[i] = float64(int(ms/float64(ops)*1000+0.5)) / 1000
			}
			row.Extra["server_cpu_ms_per_op_by_node"] = perOp
		}
	}
	row.Extra["loadavg_after"] = loadavg()
	status := fmt.Sprintf("count %d, errors %d", row.Count, row.Errors)
	if v, ok := row.Extra["client_cpu_ms_per_op"].(float64); ok {
		status += fmt.Sprintf(", client CPU %.3f ms/cycle", v)
	}
	if scrapes != nil {
		row.Extra["scrapes"], row.Extra["scrape_failures"], row.Extra["scrape_bytes"] = scrapes.Scrapes, scrapes.Failures, scrapes.Bytes
		row.Extra["scrape_p50_ms"], row.Extra["scrape_max_ms"] = scrapes.P50ms, scrapes.MaxMs
		if scrapes.FirstError != "" {
			row.Extra["scrape_first_error"] = scrapes.FirstError
		}
		if scrapeErr != nil {
			row.Extra["scrape_failed"] = scrapeErr.Error()
		}
		status += fmt.Sprintf(", scrapes %d (failed %d, p50 %s ms, max %s ms)", scrapes.Scrapes, scrapes.Failures, fmtMS(scrapes.P50ms), fmtMS(scrapes.MaxMs))
	}
	if msg, ok := row.Extra["failed"]; ok {
		status = fmt.Sprintf("FAILED: %v", msg)
	}
	ops := "-"
	if row.OpsPerS != nil {
		ops = fmt.Sprintf("%.1f", *row.OpsPerS)
	}
	fmt.Fprintf(os.Stderr, "   %-12s %-12s p50 %8s ms  p99 %8s ms  ops/s %9s  %s (%.1f s, load %s)\n",
		w, backend, fmtMS(row.P50ms), fmtMS(row.P99ms), ops, status, time.Since(t0).Seconds(), loadavg())
	return row
}

// runGo runs workload w through the Go client (internal/workload).
func runGo(ctx context.Context, pr prepared, w string, p workload.Params) (workload.Row, error) {
	switch w {
	case "uncontended":
		return workload.Uncontended(ctx, pr.target, pr.config, p)
	case "parallel":
		return workload.Parallel(ctx, pr.target, pr.config, p)
	case "contended":
		return workload.Contended(ctx, pr.target, pr.config, p)
	}
	return workload.Row{}, fmt.Errorf("unknown workload %q", w)
}

// ownCPU is this process's user+system CPU time so far, in ms.
func ownCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// checkNodeDriver makes the driver's path absolute and checks that what it
// imports is in place: bench/node's link to the client (npm ci there) and
// the client's build (npm ci && npm run build in clients/node).
func checkNodeDriver(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--node-driver: %w", err)
	}
	dist := filepath.Join(filepath.Dir(abs), "node_modules", "@warden-locks", "client", "dist", "index.js")
	if _, err := os.Stat(dist); err != nil {
		return "", fmt.Errorf("--node-driver: the Node client is not in place (%w): run `npm ci && npm run build` in clients/node, then `npm ci` in bench/node", err)
	}
	return abs, nil
}

// runNode runs workload w through the Node client: bench/node's driver, as
// a child process, on pr's cluster (its endpoints and, on TLS, root's certs
// dir), with p's sizes. Its one row comes back as a line of JSON on its
// stdout; its stderr is shown only when it fails.
func runNode(ctx context.Context, f flags, pr prepared, w string, p workload.Params) (workload.Row, error) {
	args := []string{f.nodeDriver,
		"--endpoints", strings.Join(pr.target.Endpoints, ","),
		"--workloads", w,
		"--backend", nodeBackend,
		"--config", pr.config,
		"--warmup", strconv.Itoa(p.Warmup),
		"--iterations", strconv.Itoa(p.Iterations),
		"--clients", strconv.Itoa(p.ParallelClients),
		"--seconds", strconv.Itoa(p.ParallelSeconds),
	}
	if pr.target.CertsDir != "" {
		args = append(args, "--certs-dir", pr.target.CertsDir)
	}
	cmd := exec.CommandContext(ctx, f.nodeBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The driver dies with this process, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return workload.Row{}, fmt.Errorf("node driver: %w", err)
	}
	cluster.RecordPid(cmd.Process.Pid)
	waitErr := cmd.Wait()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var row workload.Row
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &row); err != nil || row.Workload != w {
		return workload.Row{}, fmt.Errorf("node driver: no row for %s (%v, exit: %v); stderr: %s", w, err, waitErr, strings.TrimSpace(stderr.String()))
	}
	if msg, ok := row.Extra["failed"]; ok {
		return workload.Row{}, fmt.Errorf("node driver: %v; stderr: %s", msg, strings.TrimSpace(stderr.String()))
	}
	if waitErr != nil {
		return workload.Row{}, fmt.Errorf("node driver: %w; stderr: %s", waitErr, strings.TrimSpace(stderr.String()))
	}
	return row, nil
}
