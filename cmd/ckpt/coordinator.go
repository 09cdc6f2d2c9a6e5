package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/wire"
)

func newCoordinatorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "coordinator --ranks N [--listen ADDR] [--token T] [--incarnation I] [--interval P] [--join-timeout D]",
		Short: "Run a job's coordinator for ranks started by another launcher (srun, mpirun)",
		Long: `Runs the coordinator of one launch of a job whose ranks another launcher
starts — srun, mpirun — and prints the environment the ranks need. Ranks
take their rank and size from the launcher (SLURM_PROCID/SLURM_NTASKS,
OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE), join with ckpt.Join, and reach
each other at their host names (CKPT_ADVERTISE overrides). The coordinator
exits when every rank has finished (status 0) or the job fails (status 1,
with the reason); a batch script relaunches the job from its checkpoints by
starting a coordinator with the next --incarnation and the ranks again.

Ranks may start far apart: those that joined wait, unbothered, until every
rank has. If some have not joined within --join-timeout (default 10m), the
job fails naming them, and the coordinator exits 1.

  ckpt coordinator --ranks 64 --listen :7077 > coord.env &
  srun -n 64 env $(cat coord.env) ./app`,
		Args: cobra.NoArgs,
	}
	ranks := c.Flags().Int("ranks", 0, "ranks of the job (required)")
	listen := c.Flags().String("listen", ":7077", "address to listen on")
	token := c.Flags().String("token", "", "the job's secret (default: a random one, printed)")
	inc := c.Flags().Uint64("incarnation", 0, "the launch's number: 0, then one more per relaunch")
	interval := c.Flags().String("interval", "auto", "checkpoint policy the ranks decide with (give them the same CKPT_INTERVAL)")
	heartbeat := durationFlag(c.Flags(), "heartbeat-timeout", "a rank silent this long has failed (default 30s)")
	join := durationFlag(c.Flags(), "join-timeout", "how long the ranks may take to join, from the coordinator's start (default 10m)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if *ranks < 1 {
			return usagef("--ranks %d: need at least 1", *ranks)
		}
		p, err := policy.Parse(*interval)
		if err != nil {
			return usagef("--interval: %v", err)
		}
		hb := 30 * time.Second
		if heartbeat.set {
			hb = time.Duration(heartbeat.v * float64(time.Second))
		}
		jt := coord.DefaultJoinTimeout
		if join.set {
			if join.v <= 0 {
				return usagef("--join-timeout %gs: need a positive duration", join.v)
			}
			jt = time.Duration(join.v * float64(time.Second))
		}
		tok := *token
		if tok == "" {
			tok = launch.NewToken()
		}
		stderr := c.ErrOrStderr()
		f := &launch.Coordinators{Ranks: *ranks, Nodes: 1, Policy: p, HeartbeatTimeout: hb, JoinTimeout: jt, Listen: *listen,
			OnNotice: func(_ uint64, n coord.Notice) {
				// A rank lost before the start is not a failure yet (a
				// restarted one may take its place), but the operator
				// should see it rather than wait in silence.
				if n.Kind == coord.NoticeDropped {
					fmt.Fprintf(stderr, "ckpt coordinator: ranks %s left before the job started (%s); waiting for them to join again\n",
						wire.FormatRanks(n.Ranks), n.Reason)
				}
			}}
		co, err := f.New(*inc, tok)
		if err != nil {
			return err
		}
		defer co.Close()
		host, port, _ := net.SplitHostPort(co.Addr())
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		w := c.OutOrStdout()
		env := jobenv.Env{Coord: net.JoinHostPort(host, port), Token: tok, Incarnation: *inc, Interval: &p}
		for _, kv := range env.Encode() {
			fmt.Fprintln(w, kv)
		}
		select {
		case <-co.Done():
		case <-c.Context().Done():
			return c.Context().Err()
		}
		if err := co.Err(); err != nil {
			return fmt.Errorf("the job failed: %w", err)
		}
		fmt.Fprintln(c.ErrOrStderr(), "ckpt coordinator: every rank finished")
		return nil
	}
	return c
}
