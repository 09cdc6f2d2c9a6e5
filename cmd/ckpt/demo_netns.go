package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/netns"
)

// netnsFlag is ckpt demo's --netns.
func netnsFlag(fs *pflag.FlagSet) *bool {
	return fs.Bool("netns", false, "run each simulated node in a network namespace of its own, with its own address on a bridge, and the coordinator on one more (needs root and iproute2; else the nodes share loopback, as without it)")
}

// coordHost is the name of the coordinator's host among the nodes'.
const coordHost = "coord"

// onHosts makes the demo's jobs run each node on a host of its own: a
// network namespace per node and one for the coordinator, made now and
// removed by done. Where namespaces cannot be made, the jobs run as
// without --netns and a notice on progress says why (the JSON's netns is
// then absent). Staging servers do not run on hosts yet: --flush is
// refused.
func onHosts(progress io.Writer, flushModes []string, jobs demoJobs) (demoJobs, func(), error) {
	if flushModes != nil {
		return jobs, nil, usagef("--netns with --flush: the shared tier's staging servers do not run on hosts yet")
	}
	if why := netns.Unavailable(); why != "" {
		fmt.Fprintf(progress, "ckpt demo: --netns: no network namespaces here (%s): the nodes share loopback\n", why)
		return jobs, func() {}, nil
	}
	probe, _, err := jobs.spec("hosts", "none", false) // for its nodes
	if err != nil {
		return jobs, nil, err
	}
	hosts, err := netns.New(append(launch.NodeNames(probe.nodes), coordHost)...)
	if err != nil {
		return jobs, nil, err
	}
	fmt.Fprintf(progress, "ckpt demo: nodes as hosts: %s, the coordinator on %s\n", hosts, hosts.Addr(coordHost))
	jobs.run = func(ctx context.Context, s runSpec) (runResult, float64, error) {
		start := time.Now()
		res, err := runOnHosts(ctx, s, hosts)
		return res, time.Since(start).Seconds(), err
	}
	jobs.netns = true
	return jobs, func() { hosts.Close() }, nil
}

// runOnHosts runs the job as runSpec.run does, each node on its host.
func runOnHosts(ctx context.Context, s runSpec, hosts launch.Hosts) (runResult, error) {
	cfg, coords, err := s.config()
	if err != nil {
		if s.lock != nil {
			s.lock.Release()
		}
		return runResult{}, err
	}
	launch.OnHosts(&cfg, coords, hosts, coordHost)
	return s.launch(ctx, cfg, coords)
}
