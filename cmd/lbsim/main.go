// Command lbsim runs lbkit's policies against a simulated fleet in virtual
// time and reports what they do to request latency and load.
//
// Usage:
//
//	lbsim run [-out dir] scenario.json...
//
// Each scenario (docs/simulation.md describes the file) runs once per
// policy it names, deterministically from its seed. Without -out, the
// JSON report of a single scenario goes to standard output. With -out,
// each scenario's report is written to dir/NAME.json and its chart to
// dir/NAME.svg, and a Markdown table of every policy's figures goes to
// standard output. A bad scenario prints the JSON path at fault and exits
// with status 2; a run that fails exits with status 1.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lbkit/lbkit/lb/resolver/regularfile"
	"github.com/lbkit/lbkit/sim"
)

// maxScenarioSize bounds a scenario file: 4 MiB.
const maxScenarioSize = 4 << 20

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// errUsage marks an error of the command line or of a scenario (status 2).
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	err := runE(args, stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "lbsim:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "lbsim:", err)
		return 1
	}
}

func runE(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "run" {
		return fmt.Errorf("%w: lbsim run [-out dir] FILE [FILE ...]", errUsage)
	}
	fs := flag.NewFlagSet("lbsim run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "write NAME.json and NAME.svg of each scenario to this directory and print a table")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	files := fs.Args()
	if len(files) == 0 || (*out == "" && len(files) > 1) {
		return fmt.Errorf("%w: lbsim run [-out dir] FILE [FILE ...] (several scenarios need -out)", errUsage)
	}
	var table []row
	for _, f := range files {
		rep, err := runFile(f)
		if err != nil {
			return err
		}
		if *out == "" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", " ")
			return enc.Encode(rep)
		}
		if err := write(*out, rep); err != nil {
			return err
		}
		for _, p := range rep.Policies {
			table = append(table, row{rep.Scenario, p})
		}
	}
	printTable(stdout, table)
	return nil
}

// runFile parses and runs one scenario file.
func runFile(name string) (*sim.Report, error) {
	data, err := regularfile.Read(name, maxScenarioSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	s, err := sim.ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
	}
	return sim.Run(s)
}

// write puts rep's JSON and SVG in dir.
func write(dir string, rep *sim.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	base := filepath.Join(dir, rep.Scenario)
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(base + ".svg")
	if err != nil {
		return err
	}
	if err := sim.WriteSVG(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// row is one line of the results table.
type row struct {
	scenario string
	p        sim.PolicyResult
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| scenario | policy | requests | success | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | max/avg load |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		p := r.p
		fmt.Fprintf(w, "| %s | %s | %d | %s%% | %s | %s | %s | %s | %s | %s |\n", r.scenario, p.Policy, p.Requests,
			strconv.FormatFloat(100*p.SuccessRate, 'f', 2, 64), ms(p.Latency.P50), ms(p.Latency.P90),
			ms(p.Latency.P99), ms(p.Latency.P999), ms(p.Latency.Max), strconv.FormatFloat(p.Load.MaxOverAvg, 'f', 3, 64))
	}
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
