// Command check re-checks a history file that the suite wrote
// (history-SEED.jsonl) with Porcupine, offline: it prints the one-line
// verdict and the longest windows without an answered lock call, and
// writes the visualizations to -out (on failure, or always with -visualize).
//
//	go run ./cmd/check [-out DIR] [-visualize] history-7.jsonl
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/warden-locks/warden/tests/robustness"
)

func main() {
	out := flag.String("out", os.TempDir(), "where the visualizations go")
	vis := flag.Bool("visualize", false, "write the visualizations on PASS too")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: check [-out DIR] [-visualize] HISTORY.jsonl")
		os.Exit(2)
	}
	path := flag.Arg(0)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ops, faults, err := robustness.ReadHistory(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	seed, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "history-"), ".jsonl"), 10, 64)
	res := &robustness.Result{Seed: seed, Faults: map[string]int{}}
	for _, f := range faults {
		res.Faults[f.Kind]++
	}
	cfg := robustness.Config{Seed: seed, OutDir: *out, Visualize: *vis}
	if err := robustness.CheckOnly(cfg, ops, faults, res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(res.Line())
	for _, s := range robustness.Stalls(ops, faults, 5) {
		fmt.Println("stall:", s)
	}
	if res.Verdict != "PASS" {
		os.Exit(1)
	}
}
