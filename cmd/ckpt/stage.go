package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/internal/units"
)

func newStageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "stage --shared LOC --token T [--listen ADDR] [--state DIR]",
		Short: "Run a staging server: pull committed checkpoints from compute nodes to the shared tier",
		Long: `Runs a staging server (Sato et al. 2012) on an extra node. The staging client in
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
seconds, reason.`,
		Example: `  ckpt stage --shared /lustre/ckpt --token $CKPT_STAGE_TOKEN --listen :7078 --state /var/tmp/stage
  ckpt stage --shared s3://bucket/job42 --token T --writers 16 --rate 200MB/s --json`,
		Args: cobra.NoArgs,
	}
	fs := c.Flags()
	shared := fs.String("shared", "", "the shared tier: a directory or s3://BUCKET/PREFIX (default CKPT_SHARED)")
	token := fs.String("token", "", "the job's staging secret (default CKPT_STAGE_TOKEN)")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (host:port; port 0 picks one)")
	state := fs.String("state", "", "directory of the journal of pending flushes (default: none, pending flushes are lost with the server)")
	writers := fs.Int("writers", 4, "shared-tier objects written concurrently (W)")
	chunk := sizeFlag(fs, "chunk-size", "bytes per pull (default 4MiB)")
	depth := fs.Int("depth", 2, "chunks in flight per transfer (2 = double-buffered)")
	buffer := sizeFlag(fs, "buffer", "bytes of all chunk buffers together (default writers × depth × chunk size)")
	rate := bandwidthFlag(fs, "rate", "cap on the bytes per second pulled from compute nodes (default none)")
	keep := fs.Int("keep", 0, "checkpoints kept on the shared tier (default all)")
	bandwidth := bandwidthFlag(fs, "shared-bandwidth", "cap this server's writes to the shared tier (models a shared parallel file system)")
	addrFile := fs.String("addr-file", "", "write the listening address to this file once listening")
	verbose := fs.BoolP("verbose", "v", false, "log every announcement and flush on stderr")
	asJSON := fs.Bool("json", false, "print one JSON object per finished flush on stdout, one a line (SI units; non-finite values are null)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		loc := *shared
		if loc == "" {
			loc = os.Getenv(jobenv.VarShared)
		}
		tok := *token
		if tok == "" {
			tok = os.Getenv(jobenv.VarStageToken)
		}
		if loc == "" {
			return usagef("--shared is required (or CKPT_SHARED): the directory or s3:// location to write to")
		}
		if err := checkSharedLocation(loc); err != nil {
			return err
		}
		if tok == "" {
			return usagef("--token is required (or CKPT_STAGE_TOKEN): the job's staging secret its clients present")
		}
		if *writers < 1 || *writers > 1024 {
			return usagef("--writers %d: want 1 to 1024", *writers)
		}
		if *depth < 1 || *depth > 64 {
			return usagef("--depth %d: want 1 to 64", *depth)
		}
		if *keep < 0 {
			return usagef("--keep %d: want 0 (all) or more", *keep)
		}
		cfg := stage.Config{Token: tok, Writers: *writers, Depth: *depth, Keep: *keep}
		if chunk.set {
			if chunk.v < 1 || chunk.v > stage.MaxChunk {
				return usagef("--chunk-size %s: want 1 byte to %s", units.FormatSize(chunk.v), units.FormatSize(stage.MaxChunk))
			}
			cfg.ChunkSize = int(chunk.v)
		}
		if buffer.set {
			cfg.Buffer = int64(buffer.v)
			cs := cfg.ChunkSize
			if cs == 0 {
				cs = 4 << 20 // the server's default
			}
			if cfg.Buffer < int64(cs) {
				return usagef("--buffer %s: cannot hold one chunk of %s", units.FormatSize(buffer.v), units.FormatSize(float64(cs)))
			}
		}
		if rate.set {
			if rate.v <= 0 {
				return usagef("--rate %g: want a positive bandwidth such as 200MB/s", rate.v)
			}
			cfg.Rate = rate.v
		}
		if _, _, err := net.SplitHostPort(*listen); err != nil {
			return usagef("--listen %q: want HOST:PORT (port 0 picks one): %v", *listen, err)
		}
		// The staging server is the shared tier's one long-lived writer:
		// it removes what dead writers left there.
		lopts := location.Options{CleanTemp: location.DefaultCleanAge}
		if bandwidth.set {
			lopts.Bandwidth = max(bandwidth.v, 0)
		}
		b, err := location.Open(c.Context(), loc, lopts)
		if err != nil {
			return fmt.Errorf("--shared %s: %w", loc, err)
		}
		defer b.Close()
		if bandwidth.set && bandwidth.v <= 0 {
			return usagef("--shared-bandwidth %g: want a positive bandwidth", bandwidth.v)
		}
		cfg.Shared = b
		if *state != "" {
			j, err := local.New(*state)
			if err != nil {
				return fmt.Errorf("--state %s: %w", *state, err)
			}
			defer j.Close()
			cfg.Journal = j
		}
		stderr := c.ErrOrStderr()
		var outMu sync.Mutex
		if *verbose {
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
			if *asJSON {
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
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", *listen, err)
		}
		cfg.Name = ln.Addr().String()
		srv, err := stage.NewServer(cfg)
		if err != nil {
			ln.Close()
			return err
		}
		if *addrFile != "" {
			if err := writeFileAtomic(*addrFile, []byte(ln.Addr().String()+"\n")); err != nil {
				srv.Close()
				return fmt.Errorf("--addr-file: %w", err)
			}
		}
		outMu.Lock()
		fmt.Fprintf(stderr, "ckpt stage: listening on %s (writers %d, depth %d, pending %d)\n", ln.Addr(), *writers, *depth, len(srv.Pending()))
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
	return c
}

func stageEventJSON(e stage.Event) object {
	o := object{{"name", e.Name}, {"state", e.State.String()}, {"bytes", e.Bytes}, {"seconds", num(e.Seconds)}}
	if e.Reason != "" {
		o = append(o, kv{"reason", e.Reason})
	}
	return o
}

// writeFileAtomic writes a small file whole: readers see none or all of it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
