package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/model"
)

func newPhiCmd() *cobra.Command {
	c := leaf("phi (--deps P1,P2,... | --graph FILE)", "Inter-process dependency factor φ (Fialho et al. 2011, eq. 12)", phiLong, phiExample)
	fs := c.Flags()
	f := &phiFlags{}
	f.deps = fs.String("deps", "", "comma-separated P(n), one per process")
	f.graph = fs.String("graph", "", "file of who waits for whom (format above)")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// phiFlags are the flags of the command newPhiCmd builds.
type phiFlags struct {
	deps, graph *string
	asJSON      *bool
}

func (f *phiFlags) run(c *cobra.Command) error {
	var p []int
	var names []string
	switch {
	case *f.deps != "" && *f.graph != "":
		return usagef("give --deps or --graph, not both")
	case *f.deps != "":
		var err error
		if p, err = parseDeps(*f.deps); err != nil {
			return err
		}
	case *f.graph != "":
		g, err := readGraph(*f.graph)
		if err != nil {
			return err
		}
		p, names = g.P(), g.Processes
	default:
		return usagef("give --deps P1,P2,... or --graph FILE")
	}
	phi, err := model.Phi(p)
	if err != nil {
		return modelErr(err)
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		o := object{{"phi", num(phi)}, {"processes", len(p)}, {"p", p}}
		if names != nil {
			o = append(o, kv{"names", names})
		}
		return writeJSON(w, o)
	}
	t := newTable(w)
	t.row("phi", fmt.Sprintf("%.6g", phi))
	t.row("processes", strconv.Itoa(len(p)))
	sum := 0
	for _, x := range p {
		sum += x
	}
	t.row("sum of P(n)", fmt.Sprintf("%d (φ = %d / %d²)", sum, sum, len(p)))
	return t.flush()
}

const phiLong = `Computes φ = Σ P(n) / N², where P(n) is the number of processes that depend
on process n, itself included (Fialho et al. 2011, eq. 12). φ lies in (0, 1]: 1 when every
process waits for any failed one (coordinated), small when a failure stalls
few others. Use it as --phi of 'ckpt model interval --method fialho-parallel'.

Give P(n) directly with --deps (one entry per process), or a graph file of who
waits for whom with --graph. The graph file format:

  # comments start with '#'; blank lines are ignored
  master: w1 w2 w3    # master waits for w1, w2 and w3
  w1: master          # w1 waits for master
  w4:                 # a process that waits for nobody

Each line names a process, a colon, and the processes it waits for (spaces
or commas between them). Processes named only as targets count too; a
process may appear on several lines. Dependence is direct, not transitive:
P(n) = 1 + the number of other processes that wait for n.`

const phiExample = `  ckpt model phi --deps 8,2,2,2,2,2,2,2      # Fialho et al. 2011, §3.3 master/worker: 0.34375
  ckpt model phi --graph job.graph --json`

// parseDeps reads --deps: P(n) of each process, comma-separated.
func parseDeps(deps string) ([]int, error) {
	p, err := model.ParseDeps(deps)
	if err != nil {
		return nil, usagef("--deps: %v", err)
	}
	return p, nil
}

// readGraph reads the --graph file of who waits for whom.
func readGraph(path string) (model.DependencyGraph, error) {
	file, err := os.Open(path)
	if err != nil {
		return model.DependencyGraph{}, usagef("--graph: %v", err)
	}
	defer file.Close()
	g, err := model.ParseDependencyGraph(file)
	if err != nil {
		return g, usagef("--graph %s: %v", path, err)
	}
	return g, nil
}
