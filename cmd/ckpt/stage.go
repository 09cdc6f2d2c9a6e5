package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/internal/units"
)

func newStageCmd() *cobra.Command {
	c := leaf("stage --shared LOC --token T [--listen ADDR] [--state DIR]", "Run a staging server: pull committed checkpoints from compute nodes to the shared tier", stageLong, stageExample)
	fs := c.Flags()
	f := &stageFlags{
		fs:        fs,
		shared:    fs.String("shared", "", "the shared tier: a directory or s3://BUCKET/PREFIX (default CKPT_SHARED)"),
		token:     fs.String("token", "", "the job's staging secret (default CKPT_STAGE_TOKEN)"),
		listen:    fs.String("listen", "127.0.0.1:0", "address to listen on (host:port; port 0 picks one)"),
		state:     fs.String("state", "", "directory of the journal of pending flushes (default: none, pending flushes are lost with the server)"),
		writers:   fs.Int("writers", 0, "shared-tier objects written concurrently (W) (default 4, or as many as the shared tier serves at once if more: 16 for s3)"),
		chunk:     sizeFlag(fs, "chunk-size", "bytes per pull (default 4MiB)"),
		depth:     fs.Int("depth", 2, "chunks in flight per transfer (2 = double-buffered)"),
		buffer:    sizeFlag(fs, "buffer", "bytes of all chunk buffers together (default writers × depth × chunk size)"),
		rate:      bandwidthFlag(fs, "rate", "cap on the bytes per second pulled from compute nodes (default none)"),
		keep:      fs.Int("keep", 0, "checkpoints kept on the shared tier (default all)"),
		bandwidth: bandwidthFlag(fs, "shared-bandwidth", "cap this server's writes to the shared tier (models a shared parallel file system)"),
		addrFile:  fs.String("addr-file", "", "write the listening address to this file once listening"),
		verbose:   fs.BoolP("verbose", "v", false, "log every announcement and flush on stderr"),
		asJSON:    fs.Bool("json", false, "print one JSON object per finished flush on stdout, one a line (SI units; non-finite values are null)"),
	}
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, loc, err := f.config()
		if err != nil {
			return err
		}
		return f.serve(c, cfg, loc)
	}
	return c
}

const stageLong = `Runs a staging server (Sato et al. 2012) on an extra node. The staging client in
each compute node's job announces every checkpoint due for the shared tier;
the server pulls it from the node's cache in chunks while the application
computes, and writes one object per rank to the shared tier with --writers
concurrent writers. The checkpoint exists on the shared tier once its
manifest is written, after every object is durable; until then a restart
uses the newest complete one.

Pulls go through a pool of chunk buffers: --depth chunks in flight per
transfer (2: double-buffered), at most --buffer bytes in all; when every
buffer is taken the server stops pulling until a write frees one. --rate
caps the bytes per second pulled, and so the interference with the
application (the overhead factor α; ckpt bench stage measures it).

With --state the server journals its pending flushes: killed and started
again with the same --state and --listen, it resumes them when the nodes'
clients reconnect (they do on their own). Several servers may serve one
job (ckpt run --staging-servers S deals the nodes to them); they agree on
each checkpoint's completion through marker objects on the shared tier.

It prints "listening on ADDR" on stderr, and with --json one JSON line per
finished flush on stdout: name, state (committed, durable, failed), bytes,
seconds, reason.`

const stageExample = `  ckpt stage --shared /lustre/ckpt --token $CKPT_STAGE_TOKEN --listen :7078 --state /var/tmp/stage
  ckpt stage --shared s3://bucket/job42 --token T --writers 16 --rate 200MB/s --json`

// stageFlags are the flags of ckpt stage.
type stageFlags struct {
	fs                                     *pflag.FlagSet
	shared, token, listen, state, addrFile *string
	writers, depth, keep                   *int
	chunk, buffer, rate, bandwidth         *quantity
	verbose, asJSON                        *bool
}

// config checks the flags and returns the server's configuration (without
// its tiers) and the shared tier's location.
func (f *stageFlags) config() (stage.Config, string, error) {
	loc := *f.shared
	if loc == "" {
		loc = os.Getenv(jobenv.VarShared)
	}
	tok := *f.token
	if tok == "" {
		tok = os.Getenv(jobenv.VarStageToken)
	}
	if loc == "" {
		return stage.Config{}, "", usagef("--shared is required (or CKPT_SHARED): the directory or s3:// location to write to")
	}
	if err := checkSharedLocation(loc); err != nil {
		return stage.Config{}, "", err
	}
	if tok == "" {
		return stage.Config{}, "", usagef("--token is required (or CKPT_STAGE_TOKEN): the job's staging secret its clients present")
	}
	// Writers left unset are sized from the shared tier once it is open
	// (serve, stage.WritersFor); until then the sizes are checked with the
	// floor, stage.DefaultWriters, which the tier can only raise.
	cfg := stage.Config{Token: tok, Writers: stage.DefaultWriters, Depth: *f.depth, Keep: *f.keep, ChunkSize: stage.DefaultChunkSize}
	// The job's TLS: ckpt run --tls hands the files over in CKPT_TLS_CA,
	// CKPT_TLS_CERT and CKPT_TLS_KEY.
	env, err := jobenv.LookupOnly(os.LookupEnv, map[string]bool{jobenv.VarTLSCA: true, jobenv.VarTLSCert: true, jobenv.VarTLSKey: true})
	if err != nil {
		return cfg, loc, err
	}
	tc, err := jobtls.Load(env.TLS)
	if err != nil {
		return cfg, loc, err
	}
	if tc != nil {
		cfg.TLS = tc.Server
	}
	if f.fs.Changed("writers") {
		cfg.Writers = *f.writers
	}
	if f.chunk.set {
		cfg.ChunkSize = int(f.chunk.v)
	}
	cfg.Buffer = stage.DefaultBuffer(cfg.Writers, cfg.Depth, cfg.ChunkSize)
	if f.buffer.set {
		cfg.Buffer = int64(f.buffer.v)
	}
	if err := cfg.Validate(); err != nil {
		var ce *stage.ConfigError
		if errors.As(err, &ce) {
			return cfg, loc, usagef("--%s %s: %s", ce.Field, ce.Value, ce.Reason)
		}
		return cfg, loc, err
	}
	if f.rate.set {
		if f.rate.v <= 0 {
			return cfg, loc, usagef("--rate %g: want a positive bandwidth such as 200MB/s", f.rate.v)
		}
		cfg.Rate = f.rate.v
	}
	if _, _, err := net.SplitHostPort(*f.listen); err != nil {
		return cfg, loc, usagef("--listen %q: want HOST:PORT (port 0 picks one): %v", *f.listen, err)
	}
	return cfg, loc, nil
}

// serve opens the tiers, runs the server until a signal or the end of the
// command's context, and reports every finished flush.
func (f *stageFlags) serve(c *cobra.Command, cfg stage.Config, loc string) error {
	lopts := location.Options{CleanTemp: location.DefaultCleanAge}
	if f.bandwidth.set {
		lopts.Bandwidth = max(f.bandwidth.v, 0)
	}
	b, err := location.Open(c.Context(), loc, lopts)
	if err != nil {
		return fmt.Errorf("--shared %s: %w", loc, err)
	}
	defer b.Close()
	if f.bandwidth.set && f.bandwidth.v <= 0 {
		return usagef("--shared-bandwidth %g: want a positive bandwidth", f.bandwidth.v)
	}
	cfg.Shared = b
	if !f.fs.Changed("writers") {
		cfg.Writers = stage.WritersFor(b)
		if !f.buffer.set {
			cfg.Buffer = stage.DefaultBuffer(cfg.Writers, cfg.Depth, cfg.ChunkSize)
		}
	}
	if *f.state != "" {
		j, err := local.New(*f.state)
		if err != nil {
			return fmt.Errorf("--state %s: %w", *f.state, err)
		}
		defer j.Close()
		cfg.Journal = j
	}
	stderr := c.ErrOrStderr()
	var outMu sync.Mutex
	if *f.verbose {
		cfg.Logf = func(format string, args ...any) {
			outMu.Lock()
			defer outMu.Unlock()
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	out := c.OutOrStdout()
	cfg.OnDone = func(e stage.Event) {
		outMu.Lock()
		defer outMu.Unlock()
		if *f.asJSON {
			line, _ := json.Marshal(stageEventJSON(e))
			fmt.Fprintf(out, "%s\n", line)
			return
		}
		fmt.Fprintf(out, "%s %s: %s in %s", e.Name, e.State, units.FormatSize(float64(e.Bytes)), sec(e.Seconds))
		if e.Reason != "" {
			fmt.Fprintf(out, " (%s)", e.Reason)
		}
		fmt.Fprintln(out)
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *f.listen, err)
	}
	cfg.Name = ln.Addr().String()
	srv, err := stage.NewServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	if *f.addrFile != "" {
		// Durable: a job started from the file after a crash of the
		// machine finds the address whole, or no file.
		if err := local.WriteFile(*f.addrFile, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			srv.Close()
			return fmt.Errorf("--addr-file: %w", err)
		}
	}
	outMu.Lock()
	fmt.Fprintf(stderr, "ckpt stage: listening on %s (writers %d, depth %d, pending %d)\n", ln.Addr(), cfg.Writers, *f.depth, len(srv.Pending()))
	outMu.Unlock()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sig)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-sig:
	case <-c.Context().Done():
	}
	srv.Close()
	return err
}

func stageEventJSON(e stage.Event) object {
	o := object{{"name", e.Name}, {"state", e.State.String()}, {"bytes", e.Bytes}, {"seconds", num(e.Seconds)}}
	if e.Reason != "" {
		o = append(o, kv{"reason", e.Reason})
	}
	return o
}
