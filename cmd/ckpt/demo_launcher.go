package main

import (
	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/launch"
)

// demoLauncher is ckpt demo's --launcher, --launcher-args and --spares:
// the demo's jobs run through mpirun or srun as ckpt run's would, and
// its JSON adds the launcher and the nodes excluded.
type demoLauncher struct {
	name, args *string
	spares     *int
	changed    func(string) bool
	launcher   launch.Launcher // nil: the flags were not given
}

func addDemoLauncherFlags(c *cobra.Command) *demoLauncher {
	fs := c.Flags()
	return &demoLauncher{
		name:    fs.String("launcher", launch.LauncherLocal, "what starts the ranks of every launch of the demo's jobs: local, mpirun or srun (as ckpt run --launcher); --json then adds \"launcher\" and \"excluded_nodes\""),
		args:    fs.String("launcher-args", "", "more arguments for mpirun or srun (as ckpt run --launcher-args)"),
		spares:  fs.Int("spares", 0, "spare nodes beyond the demo's 4: a failed node's ranks go to a spare and the node is excluded (as ckpt run --spares)"),
		changed: fs.Changed,
	}
}

// check finds the launcher before anything runs (a usage error if it is
// unknown or missing); the plain demo only: the flushing variants keep
// ckpt run's own launcher.
func (d *demoLauncher) check(flushing bool) error {
	if !d.changed("launcher") && !d.changed("launcher-args") && !d.changed("spares") {
		return nil
	}
	if flushing {
		return usagef("--launcher, --launcher-args and --spares apply to the plain demo, not to --flush")
	}
	if *d.spares < 0 {
		return usagef("--spares %d: need ≥ 0", *d.spares)
	}
	l, err := runLauncher(*d.name, *d.args, false)
	if err != nil {
		return err
	}
	d.launcher = l
	return nil
}

// apply runs a demo job through the launcher, with the spares.
func (d *demoLauncher) apply(s *runSpec) {
	if d.launcher != nil {
		s.launcher, s.spares = d.launcher, *d.spares
	}
}

// report is the plain demo's JSON: Report as it is, or, under --launcher,
// with the launcher and the run's excluded nodes.
func (d *demoLauncher) report(r demo.Report, res runResult) any {
	if d == nil || d.launcher == nil {
		return r
	}
	return demo.LauncherReport{Report: r, Launcher: d.launcher.Name(), ExcludedNodes: excludedJSON(res.Excluded)}
}
