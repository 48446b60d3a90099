// Command gobench measures etcd through its own Go client's lock
// (clientv3/concurrency: NewSession + NewMutex(...).Lock/Unlock) beside
// Warden through its Go client (clients/go: Session.Lock + Guard.Release),
// on the uncontended, parallel (64 clients) and contended workloads of
// loadgen (bench/src/workload.rs), with the same sizes.
//
//	go run ./cmd/gobench --warden-bin ../../target/release/warden            # full sizes
//	go run ./cmd/gobench --quick                                             # smoke run, under 2 minutes
//	go run ./cmd/gobench --etcd-endpoints A,B,C --warden-endpoints D,E,F --warden-certs-dir DIR
//
// Unless given endpoints, it starts each cluster itself (three nodes on
// 127.0.0.1, ports from :0, data in a temp dir under --work-dir; see
// internal/cluster) and stops it before the next backend; every process id
// goes to $BENCH_PIDFILE as it is spawned. It writes --out (JSON rows in the
// shape of loadgen's latest.json) after every row, and a markdown table to
// stdout at the end.
package main

import (
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/warden-locks/warden/bench/go/internal/cluster"
	"github.com/warden-locks/warden/bench/go/internal/lockers"
	"github.com/warden-locks/warden/bench/go/internal/report"
	"github.com/warden-locks/warden/bench/go/internal/workload"
	"github.com/warden-locks/warden/clients/go/warden"
)

var (
	allBackends  = []string{"etcd-go-concurrency", "warden-go", "warden-go-insecure"}
	allWorkloads = []string{"uncontended", "parallel", "contended"}
)

type flags struct {
	quick           bool
	out             string
	wardenBin       string
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
	flag.StringVar(&f.out, "out", "../results/latest-go.json", "results file (JSON); written after every row")
	flag.StringVar(&f.wardenBin, "warden-bin", "../../target/release/warden", "the warden binary (starts the Warden clusters and mints their certificates)")
	flag.StringVar(&f.etcdBin, "etcd-bin", "etcd", "the etcd binary")
	flag.StringVar(&f.workDir, "work-dir", "/var/tmp", "where the clusters' temp dirs go (the real disk: fsync matters)")
	flag.StringVar(&backends, "backends", strings.Join(allBackends, ","), "comma-separated: "+strings.Join(allBackends, ", "))
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
	return map[string]any{
		"driver":        "bench/go gobench",
		"date_utc":      time.Now().UTC().Format(time.RFC3339),
		"cores":         runtime.NumCPU(),
		"loadavg_start": loadavg(),
		"load_note":     f.loadNote,
		"mode":          mode,
		"warden_commit": os.Getenv("WARDEN_COMMIT"),
		"versions": map[string]any{
			"go":             runtime.Version(),
			"etcd":           commandLine(f.etcdBin, "--version"),
			"etcd_client_v3": moduleVersion("go.etcd.io/etcd/client/v3"),
			"warden":         commandLine(f.wardenBin, "--version"),
		},
		"params": map[string]any{
			"uncontended_iterations": p.Iterations,
			"uncontended_warmup":     p.Warmup,
			"parallel_clients":       p.ParallelClients,
			"parallel_s":             p.ParallelSeconds,
			"contended_clients":      p.ContendedClients,
			"contended_s":            p.ContendedSeconds,
			"session_ttl_s":          int(lockers.TTL / time.Second),
		},
	}
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
		if len(f.wardenEndpoints) > 0 && !insecure {
			return prepared{target: lockers.Target{Backend: backend, Endpoints: f.wardenEndpoints, CertsDir: f.wardenCertsDir}, config: "given endpoints"}, nil
		}
		c, err := cluster.StartWarden(ctx, f.wardenBin, f.workDir, insecure, f.keepDirs, wardenLeads)
		if err != nil {
			return prepared{}, fmt.Errorf("start warden: %w", err)
		}
		return prepared{target: lockers.Target{Backend: backend, Endpoints: c.Endpoints(), CertsDir: c.CertsDir}, config: c.Config, cluster: c}, nil
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
	started := time.Now()
	res := report.Results{Machine: machine(f, p)}
	if len(f.wardenEndpoints) == 0 && debugInfo(f.wardenBin) {
		fmt.Fprintf(os.Stderr, "gobench: warning: %s has debug info, so it is likely a debug build (unoptimised): Warden's rows will not be representative; build one with cargo build --release -p warden --bin warden\n", f.wardenBin)
		res.Machine["warden_bin_warning"] = "debug info present: likely an unoptimised debug build"
	}
	for _, b := range f.backends {
		if len(f.wardenEndpoints) > 0 && b == "warden-go-insecure" {
			fmt.Fprintf(os.Stderr, "== %s: skipped (--warden-endpoints given; it needs a cluster started here)\n", b)
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s\n", b)
		pr, err := prepare(ctx, f, b)
		if err != nil {
			for _, w := range f.workloads {
				res.Runs = append(res.Runs, failedRow(w, b, "", err))
			}
			fmt.Fprintf(os.Stderr, "   %v\n", err)
			if werr := report.WriteJSON(f.out, res); werr != nil {
				return werr
			}
			continue
		}
		for _, w := range f.workloads {
			if ctx.Err() != nil {
				break
			}
			res.Runs = append(res.Runs, measure(ctx, pr, w, p))
			if err := report.WriteJSON(f.out, res); err != nil {
				pr.stop()
				return err
			}
		}
		pr.stop()
	}
	res.Machine["wall_s"] = int(time.Since(started).Seconds())
	res.Machine["loadavg_end"] = loadavg()
	if err := report.WriteJSON(f.out, res); err != nil {
		return err
	}
	fmt.Print(report.Markdown(res))
	fmt.Fprintf(os.Stderr, "wrote %s in %.0f s\n", f.out, time.Since(started).Seconds())
	return ctx.Err()
}

func (pr prepared) stop() {
	if pr.cluster != nil {
		pr.cluster.Stop()
	}
}

// measure runs one workload (at most 300 s) and adds the servers' CPU time
// per operation (warm-up included, each node) and the load average.
func measure(ctx context.Context, pr prepared, w string, p workload.Params) workload.Row {
	t0 := time.Now()
	var pids []int
	var before []uint64
	if pr.cluster != nil {
		pids = pr.cluster.Pids()
		for _, pid := range pids {
			before = append(before, cluster.CPUTicks(pid))
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Second)
	defer cancel()
	var (
		row workload.Row
		err error
	)
	switch w {
	case "uncontended":
		row, err = workload.Uncontended(wctx, pr.target, pr.config, p)
	case "parallel":
		row, err = workload.Parallel(wctx, pr.target, pr.config, p)
	case "contended":
		row, err = workload.Contended(wctx, pr.target, pr.config, p)
	}
	if err != nil {
		row = failedRow(w, pr.target.Backend, pr.config, err)
	} else if pids != nil {
		ops := row.Count
		if v, ok := row.Extra["ops_total"].(int); ok {
			ops = v
		}
		if ops > 0 {
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
	if msg, ok := row.Extra["failed"]; ok {
		status = fmt.Sprintf("FAILED: %v", msg)
	}
	ops := "-"
	if row.OpsPerS != nil {
		ops = fmt.Sprintf("%.1f", *row.OpsPerS)
	}
	fmt.Fprintf(os.Stderr, "   %-12s p50 %8s ms  p99 %8s ms  ops/s %9s  %s (%.1f s, load %s)\n",
		w, fmtMS(row.P50ms), fmtMS(row.P99ms), ops, status, time.Since(t0).Seconds(), loadavg())
	return row
}
