package robustness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Knobs (environment):
//
//	ROBUSTNESS_SEEDS     comma-separated schedule seeds (default "1,2")
//	ROBUSTNESS_DURATION  faults phase per schedule (default 45s; e.g. 1h)
//	ROBUSTNESS_OUT       output dir (default: a new temp dir, printed)
//	ROBUSTNESS_MUTATE    1: corrupt one answer of each schedule's history
//	                     (the verdict must then be FAIL)
//	ROBUSTNESS_VISUALIZE 1: write the visualization even on PASS
//	WARDEN_BIN           the warden binary (default ../../target/debug/warden)

var (
	outOnce sync.Once
	outDir  string
)

func output(t *testing.T) string {
	outOnce.Do(func() {
		outDir = os.Getenv("ROBUSTNESS_OUT")
		if outDir == "" {
			d, err := os.MkdirTemp("", "warden-robustness-out-")
			if err != nil {
				t.Fatal(err)
			}
			outDir = d
		}
	})
	return outDir
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func baseConfig(t *testing.T, seed int64) Config {
	if _, err := Binary(); err != nil {
		t.Fatal(err)
	}
	return Config{
		Seed: seed, Duration: 45 * time.Second, Recovery: 5 * time.Second,
		Workers: 6, Resources: 3, Epoch: 10 * time.Second, TTL: 2 * time.Second,
		OutDir: output(t), CheckTimeout: 2 * time.Minute,
		Visualize: os.Getenv("ROBUSTNESS_VISUALIZE") == "1",
	}
}

// TestRobustness defends S1 (exclusion), S2 (fencing tokens grow per
// resource and the fenced store never accepts a token below one it
// accepted, even from a client paused past its TTL) and S6 (a release never
// frees another grant) on a real cluster under a seeded nemesis, and L1
// (the healed cluster grants again). Each schedule's history is checked by
// Porcupine; the verdict line is logged and written under ROBUSTNESS_OUT.
func TestRobustness(t *testing.T) {
	seeds := os.Getenv("ROBUSTNESS_SEEDS")
	if seeds == "" {
		seeds = "1,2"
	}
	dur := envDuration(t, "ROBUSTNESS_DURATION", 45*time.Second)
	for _, s := range strings.Split(seeds, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("ROBUSTNESS_SEEDS: %v", err)
		}
		t.Run("seed="+s, func(t *testing.T) {
			cfg := baseConfig(t, seed)
			cfg.Duration = dur
			cfg.Nemesis = true
			cfg.Kinds = true
			cfg.Mutate = os.Getenv("ROBUSTNESS_MUTATE") == "1"
			if dur > 10*time.Minute {
				cfg.CheckTimeout = 30 * time.Minute
			}
			res, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Line())
			if res.Mutation != "" {
				t.Log("mutated: " + res.Mutation)
			}
			if res.Verdict != "PASS" {
				t.Fatalf("verdict %s: %s", res.Verdict, strings.Join(res.Problems, "; "))
			}
			if res.Grants == 0 || res.Accepted == 0 {
				t.Fatalf("the workload did nothing checkable: %d grants, %d accepted writes", res.Grants, res.Accepted)
			}
		})
	}
}

// TestMutatedAnswerIsCaught defends the checker itself: one corrupted
// answer in a real history (a grant recorded with an earlier grant's token)
// makes Porcupine report the mutex history not linearizable and write its
// visualization.
func TestMutatedAnswerIsCaught(t *testing.T) {
	cfg := baseConfig(t, 1001)
	cfg.Duration, cfg.Recovery = 6*time.Second, time.Second
	cfg.Mutate = true
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	if res.Mutation == "" {
		t.Fatal("no answer was corrupted")
	}
	if res.Verdict != "FAIL" {
		t.Fatalf("verdict %s after mutating (%s), want FAIL", res.Verdict, res.Mutation)
	}
	if !contains(res.Problems, "mutex history is not linearizable") {
		t.Fatalf("problems %q do not name the mutex history", res.Problems)
	}
	assertVisualization(t, filepath.Join(cfg.OutDir, "mutex-1001.html"))
}

// TestLyingClientIsCaught defends the suite's reach to client-side bugs:
// one worker of four reports its refused try-locks as granted (with a
// fresh-looking token); the holders it lied about later release their
// grants successfully, which no linearization allows.
func TestLyingClientIsCaught(t *testing.T) {
	cfg := baseConfig(t, 1002)
	cfg.Duration, cfg.Recovery = 8*time.Second, time.Second
	cfg.Workers, cfg.Resources, cfg.Liars = 4, 1, 1
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Line())
	if res.Verdict != "FAIL" || !contains(res.Problems, "mutex history is not linearizable") {
		t.Fatalf("verdict %s (%q) with a lying client, want the mutex history refused", res.Verdict, res.Problems)
	}
	assertVisualization(t, filepath.Join(cfg.OutDir, "mutex-1002.html"))
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func assertVisualization(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no visualization: %v", err)
	}
	if !strings.Contains(string(data), "<html") || len(data) < 10000 {
		t.Fatalf("%s is not Porcupine's visualization (%d bytes)", path, len(data))
	}
}
