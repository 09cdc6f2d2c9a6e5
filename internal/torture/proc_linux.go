package torture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Reference runs w once without faults.
func (p *Procs) Reference(ctx context.Context, w Workload) ([]Event, error) {
	j, err := p.start(ctx, w, "ref-"+w.Name, false)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	var events []Event
	var peak diskPeak
	defer func() {
		if p.peaks == nil {
			p.peaks = map[string]diskPeak{}
		}
		p.peaks[w.Name] = peak
	}()
	for {
		e, err := j.Next(ctx)
		if err != nil {
			return nil, err
		}
		j.measure(&peak)
		if e.Kind == "exit" {
			if e.Err != "" {
				return events, fmt.Errorf("%s\n%s", e.Err, j.tail())
			}
			return events, nil
		}
		events = append(events, e)
	}
}

// Start starts a job of w.
func (p *Procs) Start(ctx context.Context, w Workload, seq int) (Job, error) {
	return p.start(ctx, w, fmt.Sprintf("run%d-%s", seq, w.Name), p.Sandbox)
}

func (p *Procs) start(ctx context.Context, w Workload, name string, sandboxed bool) (*procJob, error) {
	dir := filepath.Join(p.Dir, name)
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j := &procJob{p: p, w: w, dir: dir, cache: filepath.Join(dir, "job"), shared: filepath.Join(dir, "shared"),
		trace: filepath.Join(dir, "trace.jsonl"), log: filepath.Join(dir, "run.log")}
	if sandboxed {
		// The shared tier goes on a disk of its own.
		if err := j.sandbox(ctx, p.peaks[w.Name]); err != nil {
			j.Close()
			return nil, err
		}
	} else if err := os.MkdirAll(j.shared, 0o755); err != nil {
		return nil, err
	}
	j.args = []string{"run", "-n", strconv.Itoa(w.Ranks), "--nodes", strconv.Itoa(w.Nodes),
		"--redundancy", w.Redundancy, "--shared", j.shared, "--flush-every", strconv.Itoa(max(p.FlushEvery, 1)),
		"--interval", w.Interval, "--heartbeat-timeout", p.Heartbeat.String(), "--retries", "100",
		"--cache-root", j.cache, "--json"}
	if w.Staging > 0 {
		j.args = append(j.args, "--staging-servers", strconv.Itoa(w.Staging))
	}
	if w.Tree {
		j.args = append(j.args, "--tree")
	}
	j.args = append(append(append(j.args, "--", p.Exe), w.Args...), "--trace", j.trace)
	if err := j.launch(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// procJob is a job of Procs.
type procJob struct {
	p                  *Procs
	w                  Workload
	dir, cache, shared string
	trace, log         string
	args               []string
	cmd                *exec.Cmd
	exited             chan struct{} // closed when cmd has ended
	stdout             *bytes.Buffer
	exitSeen           bool
	off                int64 // trace bytes read
	queue              []Event
	stopped            []int // processes a fault stopped (SIGSTOP), for Heal and Close
	sharedDown         bool
	// dial reaches the job's listeners (nil: a TCP dial from here);
	// attacked is what the last hostile fault's attacks found; leakWait
	// bounds the wait for a listener to close the attackers' connections
	// (0: leakBound).
	dial     func(ctx context.Context, addr string) (net.Conn, error)
	attacked Attacks
	leakWait time.Duration
	sb       *sandbox // the job's namespaces and disks (nil: none)
	lasting  *lasting // the network or disk fault Heal ends
}

// launch starts a `ckpt run` of the job.
func (j *procJob) launch() error {
	logf, err := os.OpenFile(j.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s %s\n", j.p.Exe, strings.Join(j.args, " "))
	cmd := exec.Command(j.p.Exe, j.args...)
	if j.sb != nil {
		cmd = j.sb.command(j.p.Exe, j.args...)
	}
	j.stdout = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = j.stdout, logf
	// Its own process group, and killed with the campaign: no job
	// outlives the torture that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	j.cmd, j.exited, j.exitSeen = cmd, make(chan struct{}), false
	done := j.exited
	go func() { cmd.Wait(); close(done) }()
	return nil
}

// Next returns the trace's next event, polling the file.
func (j *procJob) Next(ctx context.Context) (Event, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := j.read(); err != nil {
			return Event{}, err
		}
		if len(j.queue) > 0 {
			e := j.queue[0]
			j.queue = j.queue[1:]
			return e, nil
		}
		select {
		case <-j.exited:
			// Everything the job wrote before it ended is in the file.
			if err := j.read(); err != nil {
				return Event{}, err
			}
			if len(j.queue) > 0 {
				continue
			}
			if !j.exitSeen {
				j.exitSeen = true
				return Event{Kind: "exit", At: time.Now(), Err: j.exitErr()}, nil
			}
		default:
		}
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// exitErr is why the ended ckpt run did not finish ("" if it did): its
// JSON's "error".
func (j *procJob) exitErr() string {
	var out struct {
		Result string  `json:"result"`
		Error  *string `json:"error"`
	}
	if err := json.Unmarshal(j.stdout.Bytes(), &out); err != nil {
		return fmt.Sprintf("ckpt run ended (%v) without its JSON report", j.cmd.ProcessState)
	}
	if out.Error != nil {
		return *out.Error
	}
	return ""
}

// read parses the trace's complete new lines into the queue.
func (j *procJob) read() error {
	f, err := os.Open(j.trace)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(j.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil // a line being written: read it next time
		}
		line := b[:i]
		b = b[i+1:]
		j.off += int64(i + 1)
		var t struct {
			Event    string `json:"event"`
			Step     int64  `json:"step"`
			Checksum string `json:"checksum"`
			From     string `json:"from"`
			At       int64  `json:"t"`
		}
		if err := json.Unmarshal(line, &t); err != nil {
			// A rank killed inside a write leaves a torn line; the
			// restart appends after it.
			continue
		}
		j.queue = append(j.queue, Event{Kind: t.Event, Step: t.Step, Checksum: t.Checksum, From: t.From, At: time.Unix(0, t.At)})
	}
}

// proc is a process of the job.
type proc struct {
	pid        int
	rank, node int    // ranks: CKPT_RANK, CKPT_NODE (-1 otherwise)
	cache      string // ranks: CKPT_CACHE
	stage      int    // staging servers: its index (-1 otherwise)
}

// children lists the launcher's live children: its ranks and staging
// servers.
func (j *procJob) children() []proc {
	ents, _ := os.ReadDir("/proc")
	launcher := j.cmd.Process.Pid
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[0] == "Z" || fields[1] != strconv.Itoa(launcher) {
			continue
		}
		p := proc{pid: pid, rank: -1, node: -1, stage: -1}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		env := parseEnviron(b)
		if v, ok := env[jobenv.VarRank]; ok {
			p.rank, _ = strconv.Atoi(v)
		}
		if v, ok := env[jobenv.VarNode]; ok {
			p.node, _ = strconv.Atoi(strings.TrimPrefix(v, "node"))
		}
		p.cache = env[jobenv.VarCache]
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmdline), "\x00")
		for i, a := range args {
			if a == "--state" && i+1 < len(args) && len(args) > 1 && args[1] == "stage" {
				p.stage, _ = strconv.Atoi(strings.TrimPrefix(filepath.Base(args[i+1]), "stage"))
			}
		}
		out = append(out, p)
	}
	return out
}

// ranks waits until every rank of the job runs, and returns them by rank.
func (j *procJob) ranks(ctx context.Context) ([]proc, error) {
	deadline := time.Now().Add(j.p.wait())
	for {
		byRank := make([]proc, j.w.Ranks)
		n := 0
		for _, p := range j.children() {
			if p.rank >= 0 && p.rank < j.w.Ranks && byRank[p.rank].pid == 0 {
				byRank[p.rank] = p
				n++
			}
		}
		if n == j.w.Ranks {
			return byRank, nil
		}
		select {
		case <-j.exited:
			return nil, fmt.Errorf("%w: the job has ended", ErrNothingToHit)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %d of %d ranks running", ErrNothingToHit, n, j.w.Ranks)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func signal(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
}

// Inject performs f.
func (j *procJob) Inject(ctx context.Context, f Fault) (time.Time, error) {
	switch f.Kind {
	case KillLauncher:
		return j.killLauncher(ctx)
	case KillStage, HangStage:
		return j.hitStage(f)
	case Hostile:
		return j.attack(ctx)
	case CutNode, PartitionNode, DiskFull, SharedFull:
		return j.injectNetDisk(f)
	case SharedDown:
		// Root ignores permissions, so the tier is made unusable by
		// taking its directory away and putting a file in its place:
		// every open, create and list under it fails (ENOTDIR).
		if err := os.Rename(j.host(j.shared), j.host(j.shared)+".down"); err != nil {
			return time.Time{}, err
		}
		if err := os.WriteFile(j.host(j.shared), []byte("shared tier down (ckpt torture)\n"), 0o644); err != nil {
			return time.Time{}, err
		}
		j.sharedDown = true
		return time.Now(), nil
	}
	ranks, err := j.ranks(ctx)
	if err != nil {
		return time.Time{}, err
	}
	pids := make([]int, len(ranks))
	for i, r := range ranks {
		pids[i] = r.pid
	}
	target := ranks[f.Target%len(ranks)]
	switch f.Kind {
	case KillRank:
		signal([]int{target.pid}, syscall.SIGKILL)
		return time.Now(), nil
	case HangRank:
		// The launcher kills it (SIGKILL ends a stopped process) once
		// the heartbeat timeout has caught it.
		signal([]int{target.pid}, syscall.SIGSTOP)
		return time.Now(), nil
	case KillNode:
		var node []int
		cache := ""
		for _, r := range ranks {
			if r.node == f.Target {
				node, cache = append(node, r.pid), r.cache
			}
		}
		if len(node) == 0 || cache == "" {
			return time.Time{}, fmt.Errorf("%w: no rank on node %d", ErrNothingToHit, f.Target)
		}
		// Stopped first, so that the node's ranks go together and none
		// writes into the cache being deleted.
		signal(node, syscall.SIGSTOP)
		err := j.removeCache(cache)
		signal(node, syscall.SIGKILL)
		return time.Now(), err
	}
	// Corruption: the job is frozen while its newest checkpoint is
	// damaged, so that no newer one commits, then a rank is killed.
	signal(pids, syscall.SIGSTOP)
	err = j.corrupt(f, ranks, target)
	if err != nil {
		signal(pids, syscall.SIGCONT)
		return time.Time{}, err
	}
	signal([]int{target.pid}, syscall.SIGKILL)
	signal(pids, syscall.SIGCONT)
	return time.Now(), nil
}

// corrupt flips bytes of the object f names in the newest checkpoint.
func (j *procJob) corrupt(f Fault, ranks []proc, target proc) error {
	var file string
	switch f.Kind {
	case CorruptData, CorruptParity:
		cache := j.host(target.cache)
		name, err := newest(cache, "/manifest")
		if err != nil {
			return err
		}
		if f.Kind == CorruptParity {
			file = filepath.Join(cache, name, fmt.Sprintf("rank-%d.parity", target.rank))
		} else {
			files, _ := filepath.Glob(filepath.Join(cache, name, fmt.Sprintf("rank-%d", target.rank), "*"))
			if len(files) == 0 {
				return fmt.Errorf("%w: rank %d has no files in %s", ErrNothingToHit, target.rank, name)
			}
			sort.Strings(files)
			file = files[int(f.Flip%uint64(len(files)))]
		}
	case CorruptCacheManifest:
		cache := ""
		for _, r := range ranks {
			if r.node == f.Target {
				cache = j.host(r.cache)
			}
		}
		name, err := newest(cache, "/manifest")
		if err != nil {
			return err
		}
		file = filepath.Join(cache, name, "manifest")
	case CorruptSharedObject, CorruptSharedManifest:
		shared := j.host(j.shared)
		name, err := newest(shared, ".manifest")
		if err != nil {
			return err
		}
		file = filepath.Join(shared, name+".manifest")
		if f.Kind == CorruptSharedObject {
			file = filepath.Join(shared, name, fmt.Sprintf("rank-%d.data", target.rank))
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if err := flip(file, f.Flip, f.Flips); err != nil {
		return err
	}
	if f.Kind == CorruptSharedObject || f.Kind == CorruptSharedManifest {
		// Every cache goes too: only then must the restart read the
		// shared tier, and find the damage.
		seen := map[string]bool{}
		for _, r := range ranks {
			if !seen[r.cache] {
				seen[r.cache] = true
				if err := j.removeCache(r.cache); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// newest is the newest committed checkpoint under dir: the one whose
// manifest (its name ends in suffix: "/manifest" in a cache, ".manifest"
// on the shared tier) was written last.
func newest(dir, suffix string) (string, error) {
	pattern := filepath.Join(dir, "*"+suffix)
	if suffix == "/manifest" {
		pattern = filepath.Join(dir, "*", "manifest")
	}
	files, _ := filepath.Glob(pattern)
	best, bestT := "", time.Time{}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if best == "" || st.ModTime().After(bestT) {
			best, bestT = f, st.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w: no committed checkpoint in %s", ErrNothingToHit, dir)
	}
	rel, _ := filepath.Rel(dir, best)
	return strings.TrimSuffix(rel, suffix), nil
}

// flip inverts n bytes of file at offsets drawn from seed.
func flip(file string, seed uint64, n int) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNothingToHit, err)
	}
	if len(b) == 0 {
		return fmt.Errorf("%w: %s is empty", ErrNothingToHit, file)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		b[rng.IntN(len(b))] ^= 0xff
	}
	return os.WriteFile(file, b, 0o644)
}

// hitStage kills or stops a staging server.
func (j *procJob) hitStage(f Fault) (time.Time, error) {
	var servers []proc
	for _, p := range j.children() {
		if p.stage >= 0 {
			servers = append(servers, p)
		}
	}
	if len(servers) == 0 {
		return time.Time{}, fmt.Errorf("%w: no staging server runs", ErrNothingToHit)
	}
	sort.Slice(servers, func(a, b int) bool { return servers[a].stage < servers[b].stage })
	s := servers[f.Target%len(servers)]
	if f.Kind == KillStage {
		signal([]int{s.pid}, syscall.SIGKILL)
	} else {
		signal([]int{s.pid}, syscall.SIGSTOP)
		j.stopped = append(j.stopped, s.pid)
	}
	return time.Now(), nil
}

// killLauncher kills ckpt run, waits until its ranks are gone (they die
// with it), and runs the same command again: it resumes the job.
func (j *procJob) killLauncher(ctx context.Context) (time.Time, error) {
	kids := j.children()
	j.cmd.Process.Kill()
	at := time.Now()
	if err := j.reap(ctx, kids); err != nil {
		return at, err
	}
	return at, j.launch()
}

// reap waits for the ended launcher and its children kids to be gone.
func (j *procJob) reap(ctx context.Context, kids []proc) error {
	select {
	case <-j.exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.Now().Add(j.p.wait())
	for _, k := range kids {
		for syscall.Kill(k.pid, 0) == nil && !zombie(k.pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d outlived its launcher for %s", k.pid, j.p.wait())
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// Heal ends a fault that lasts.
func (j *procJob) Heal(ctx context.Context, f Fault) error {
	switch f.Kind {
	case SharedDown:
		return j.sharedUp()
	case PartitionNode, DiskFull, SharedFull:
		return j.unhold()
	case HangStage:
		signal(j.stopped, syscall.SIGCONT)
		j.stopped = nil
	}
	return nil
}

func (j *procJob) sharedUp() error {
	if !j.sharedDown {
		return nil
	}
	if err := os.Remove(j.host(j.shared)); err != nil {
		return err
	}
	j.sharedDown = false
	return os.Rename(j.host(j.shared)+".down", j.host(j.shared))
}

// Resume runs the job's command again.
func (j *procJob) Resume(ctx context.Context) error {
	select {
	case <-j.exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	return j.launch()
}

// Close kills the job and removes its directory (unless Keep).
func (j *procJob) Close() error {
	var err error
	if j.cmd != nil {
		kids := j.children()
		j.cmd.Process.Kill()
		signal(j.stopped, syscall.SIGCONT)
		ctx, cancel := context.WithTimeout(context.Background(), j.p.wait())
		defer cancel()
		err = j.reap(ctx, kids)
	}
	if e := j.unhold(); err == nil {
		err = e
	}
	if e := j.sharedUp(); err == nil {
		err = e
	}
	if j.sb != nil {
		// The job's processes are gone: its mounts and qdiscs go with the
		// holder.
		j.sb.Close()
		j.sb = nil
	}
	if !j.p.Keep {
		os.RemoveAll(j.dir)
	}
	return err
}

// tail is the end of the job's log, for messages.
func (j *procJob) tail() string {
	f, err := os.Open(j.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 5 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// removeCache deletes a node's cache. kill(SIGSTOP) returns before its
// target has stopped, so a rank in the middle of a write may still add a
// file while the tree is removed ("directory not empty", seen once in a
// run of 1,000 faults): the removal is tried again until nothing is left.
// In a sandbox the cache is a mount point (its node's disk): what it
// holds goes, the directory stays, as on a replaced disk.
func (j *procJob) removeCache(dir string) error {
	var err error
	for range 20 {
		if j.sb != nil {
			err = removeContents(j.host(dir))
		} else {
			err = os.RemoveAll(dir)
		}
		if err == nil || !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// removeContents deletes everything in dir, not dir.
func removeContents(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
