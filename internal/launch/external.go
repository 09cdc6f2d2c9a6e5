package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Kinds of External launchers, as ckpt run --launcher names them.
const (
	LauncherLocal  = "local"
	LauncherMPIRun = "mpirun"
	LauncherSrun   = "srun"
)

// MPI implementations whose mpirun External speaks.
const (
	OpenMPI = "Open MPI"
	Hydra   = "MPICH (Hydra)"
)

// External runs every attempt's ranks through one run of a parallel
// launcher: mpirun (Open MPI's, or MPICH's Hydra) or Slurm's srun. Such a
// launcher gives every rank the same environment, so each rank derives
// what is its own: its rank from the launcher's variables
// (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID: the first set), its node from
// jobenv.VarNodes and its cache from jobenv.VarCacheRoot (jobenv.Lookup),
// the same block mapping Local uses, so that the simulated nodes exist
// under every launcher. The job's variables reach the ranks through the
// launcher's own mechanism (Open MPI's -x NAME, Hydra's -genvlist, srun's
// --export=ALL,NAME,...), by name: their values are in the launcher's
// environment.
//
// A rank's death ends the launcher, which reports it in its exit status
// (a signal as 128+N); injected failures kill the rank's process, found
// by the host and pid it published as it joined (jobenv.KeyProc). Only
// ranks on this host can be killed: a rank on another host is a clear
// error (it would need a remote kill: ssh, or the batch system's own,
// such as scancel --signal for a step).
type External struct {
	// Kind is LauncherMPIRun or LauncherSrun; Path the program.
	Kind, Path string
	// Flavor is the MPI implementation of mpirun (OpenMPI or Hydra).
	Flavor string
	// Args are added to the launcher's command line before the program
	// (ckpt run --launcher-args).
	Args []string
	// Root: the launcher runs as root (Open MPI then needs
	// --allow-run-as-root).
	Root bool
	// TermGrace is how long the launcher has to end its ranks after
	// SIGTERM, before its process group is killed (default 5s).
	TermGrace time.Duration
	// JobID is the Slurm allocation ckpt holds for the job (Hold), "" if
	// none: every srun then runs as a step of it (--jobid).
	JobID string
	// Output runs a Slurm client (SpareHosts: scontrol, squeue, sinfo)
	// and returns its standard output; nil runs it (exec).
	Output func(name string, args ...string) ([]byte, error)
}

// SpareHosts are the hosts the launcher may run ranks on, where a spare
// node goes when its host is not known yet (HostSource). Inside a Slurm
// allocation, for srun and mpirun alike (Open MPI's mpirun runs its
// daemons on the allocation's nodes), its nodes: SLURM_JOB_NODELIST,
// else squeue's list of the job SLURM_JOB_ID names. Outside one, srun's
// are the cluster's responding nodes (sinfo -r), mpirun's the hosts its
// --launcher-args name (--host, --hostfile: mpirunHosts). Slurm's lists
// are expanded by scontrol show hostnames.
func (e *External) SpareHosts() ([]string, error) {
	if e.Kind != LauncherSrun && os.Getenv("SLURM_JOB_ID") == "" {
		return mpirunHosts(e.Args, os.ReadFile)
	}
	out := e.Output
	if out == nil {
		out = func(name string, args ...string) ([]byte, error) {
			// A controller that does not answer must not hold the
			// relaunch forever: the pinning then falls back.
			ctx, cancel := context.WithTimeout(context.Background(), slurmQueryTimeout)
			defer cancel()
			b, err := exec.CommandContext(ctx, name, args...).Output()
			var x *exec.ExitError
			if errors.As(err, &x) && len(x.Stderr) > 0 {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(x.Stderr)))
			}
			return b, err
		}
	}
	id, list := os.Getenv("SLURM_JOB_ID"), os.Getenv("SLURM_JOB_NODELIST")
	if e.JobID != "" {
		// The allocation ckpt holds (Hold): its nodes, squeue's.
		id, list = e.JobID, ""
	}
	var err error
	var b []byte
	switch {
	case id != "" && list == "":
		b, err = out("squeue", "-h", "-j", id, "-o", "%N")
		list = strings.TrimSpace(string(b))
	case id == "":
		// One node and partition per line. Only the partition srun will
		// use: SLURM_PARTITION's, else the default (marked "*"), else
		// (none marked) every one.
		b, err = out("sinfo", "-h", "-N", "-r", "-o", "%N %P")
		list = strings.Join(partitionNodes(string(b), os.Getenv("SLURM_PARTITION")), ",")
	}
	if err != nil {
		return nil, fmt.Errorf("%s's hosts: %w", e.Kind, err)
	}
	if list == "" {
		return nil, nil
	}
	b, err = out("scontrol", "show", "hostnames", list)
	if err != nil {
		return nil, fmt.Errorf("%s's hosts: scontrol show hostnames %s: %w", e.Kind, list, err)
	}
	var hosts []string
	for _, h := range strings.Fields(string(b)) {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// SlurmNames says whether the launcher knows hosts by their Slurm node
// names (SLURMD_NODENAME, jobenv.Proc.Where): srun always, mpirun inside
// a Slurm allocation (SLURM_JOB_ID), where it runs its daemons on the
// allocation's nodes through srun and refuses a host file naming any
// other host.
func (e *External) SlurmNames() bool {
	return e.Kind == LauncherSrun || os.Getenv("SLURM_JOB_ID") != ""
}

// mpirunHosts are the hosts mpirun's arguments name, in their order,
// each once: Open MPI's --host/-H/-host lists (HOST or HOST:SLOTS,
// comma-separated; MPICH's -hosts alike) and the host files of
// --hostfile, --machinefile (or their one-dash forms) and Hydra's -f (a
// host first on each line, with " slots=N" or ":N"; "#" begins a
// comment). A host file that cannot be read, an option without its
// value, an empty host or slots that are not a whole number ≥ 1 are an
// error naming the option and the value: mpirun refuses them too, but a
// launch ckpt places drops them (withoutHosts), and a spare would go to
// a host that is none.
func mpirunHosts(args []string, read func(string) ([]byte, error)) ([]string, error) {
	var hosts []string
	for i := 0; i < len(args); i++ {
		opt, val, inline := strings.Cut(args[i], "=")
		kind := mpirunHostOption(opt)
		if kind == "" {
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("mpirun's hosts: %s: no value", opt)
			}
			i++
			val = args[i]
		}
		if kind == "list" {
			for _, h := range strings.Split(val, ",") {
				name, err := mpirunHost(strings.TrimSpace(h))
				if err != nil {
					return nil, fmt.Errorf("mpirun's hosts: %s %q: %w", opt, val, err)
				}
				if !slices.Contains(hosts, name) {
					hosts = append(hosts, name)
				}
			}
			continue
		}
		b, err := read(val)
		if err != nil {
			return nil, fmt.Errorf("mpirun's hosts: %s %s: %w", opt, val, err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			name, err := mpirunHost(f[0])
			if err != nil {
				return nil, fmt.Errorf("mpirun's hosts: %s %s: line %d: %w", opt, val, n+1, err)
			}
			if !slices.Contains(hosts, name) {
				hosts = append(hosts, name)
			}
		}
	}
	return hosts, nil
}

// mpirunHost is the host of one HOST or HOST:SLOTS entry, an error
// naming it if the host is empty or the slots not a whole number ≥ 1.
func mpirunHost(entry string) (string, error) {
	host, slots, hasSlots := strings.Cut(entry, ":")
	if host == "" {
		return "", fmt.Errorf("%q: no host", entry)
	}
	if n, err := strconv.Atoi(slots); hasSlots && (err != nil || n < 1) {
		return "", fmt.Errorf("%s: slots %q: want a whole number ≥ 1", entry, slots)
	}
	return host, nil
}

// mpirunHostOption is what an mpirun option names: "list" (hosts),
// "file" (a host file), or "" (neither).
func mpirunHostOption(opt string) string {
	switch opt {
	case "--host", "-host", "-H", "--hosts", "-hosts":
		return "list"
	case "--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f", "--default-hostfile", "-default-hostfile":
		return "file"
	}
	return ""
}

// withoutHosts is mpirun's args without the hosts they name
// (mpirunHosts): a launch whose ranks ckpt places with a host file of
// its own, which says exactly where each goes; Open MPI refuses a
// --host that its host file lacks. Pinned (Open MPI's sequential mapper,
// --map-by seq; Hydra's host file of each host's consecutive ranks),
// without the user's mapping options of flavor too (mpirunMapOption):
// Open MPI takes the last --map-by given, so a user's --map-by (or
// --rankfile, -npernode, ...) would silently undo the pin, and Hydra's
// -ppn (or -rr, ...) overrides the host file's counts. dropped are the
// arguments left out, for the launch to say so.
func withoutHosts(args []string, pinned bool, flavor string) (kept, dropped []string) {
	for i := 0; i < len(args); i++ {
		opt, _, inline := strings.Cut(args[i], "=")
		value := mpirunHostOption(opt) != ""
		flag := false
		if pinned {
			m := mpirunMapOption(flavor, opt)
			value, flag = value || m == "value", m == "flag"
		}
		switch {
		case flag:
			dropped = append(dropped, args[i])
		case !value:
			kept = append(kept, args[i])
		case !inline && i+1 < len(args):
			dropped = append(dropped, args[i], args[i+1])
			i++
		default:
			dropped = append(dropped, args[i])
		}
	}
	return kept, dropped
}

// mpirunMapOption is what a mapping option of flavor's mpirun takes, one
// that changes which host a rank goes to: "value" (Open MPI 4.x and 5.x:
// --map-by POLICY, --rankfile FILE, -npernode N; Hydra: -ppn N, -perhost
// N, -grr N), "flag" (Open MPI: --bynode; Hydra: -rr), or "" (none, such
// as -bind-to, which binds a rank within its host).
func mpirunMapOption(flavor, opt string) string {
	if flavor == Hydra {
		// Hydra takes its options with one dash or two.
		if !strings.HasPrefix(opt, "-") || strings.HasPrefix(opt, "---") {
			return ""
		}
		switch strings.TrimLeft(opt, "-") {
		case "ppn", "perhost", "grr":
			return "value"
		case "rr":
			return "flag"
		}
		return ""
	}
	switch opt {
	case "--map-by", "-map-by", "--rankfile", "-rankfile", "-rf", "--npernode", "-npernode", "-N",
		"--npersocket", "-npersocket", "--ppr", "-ppr", "--mapby", "-mapby":
		return "value"
	case "--bynode", "-bynode", "--byslot", "-byslot", "--pernode", "-pernode", "--bycore", "-bycore", "--bysocket", "-bysocket":
		return "flag"
	}
	return ""
}

// slurmQueryTimeout bounds each Slurm client SpareHosts runs.
const slurmQueryTimeout = 30 * time.Second

// partitionNodes are the nodes of sinfo's "%N %P" lines that are in
// partition part, or in the default partition if part is "", or all of
// them if no line is of the default partition.
func partitionNodes(lines, part string) []string {
	var def, all, in []string
	for _, l := range strings.Split(lines, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		node, p := f[0], f[1]
		all = append(all, node)
		if strings.HasSuffix(p, "*") {
			def = append(def, node)
		}
		if part != "" && strings.TrimSuffix(p, "*") == part {
			in = append(in, node)
		}
	}
	switch {
	case part != "":
		return in
	case len(def) > 0:
		return def
	}
	return all
}

// NewExternal finds the launcher kind (mpirun or srun) on PATH and, for
// mpirun, which MPI it is (mpirun --version). Its error names what is
// missing or what was found instead.
func NewExternal(kind string, args []string) (*External, error) {
	if kind != LauncherMPIRun && kind != LauncherSrun {
		return nil, fmt.Errorf("launcher %q: want %s, %s or %s", kind, LauncherLocal, LauncherMPIRun, LauncherSrun)
	}
	path, err := exec.LookPath(kind)
	if err != nil {
		what := "Slurm's srun"
		if kind == LauncherMPIRun {
			what = "an MPI's mpirun (Open MPI: apt install openmpi-bin)"
		}
		return nil, fmt.Errorf("--launcher %s: %s is not on PATH: %w", kind, what, err)
	}
	e := &External{Kind: kind, Path: path, Args: args, Root: os.Geteuid() == 0}
	if kind == LauncherMPIRun {
		out, err := exec.Command(path, "--version").CombinedOutput()
		if e.Flavor = MPIFlavor(string(out)); e.Flavor == "" {
			first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			return nil, fmt.Errorf("--launcher mpirun: %s is neither Open MPI's nor MPICH's (its --version says %q; %v)", path, first, err)
		}
	}
	return e, nil
}

// MPIFlavor is the MPI an mpirun --version output names: OpenMPI, Hydra,
// or "" for another.
func MPIFlavor(version string) string {
	switch {
	case strings.Contains(version, "Open MPI") || strings.Contains(version, "OpenRTE"):
		return OpenMPI
	case strings.Contains(version, "HYDRA") || strings.Contains(version, "Hydra"):
		return Hydra
	}
	return ""
}

// Name is the launcher's kind.
func (e *External) Name() string { return e.Kind }

// Command is the launcher's command line (without its path) for ranks of
// program args on nodes (ranks fill them in blocks, NodeOf; 0: the
// launcher's choice), passing the variables of names to every rank.
func (e *External) Command(ranks, nodes int, names []string, program string, args []string) []string {
	return e.command(ranks, nodes, names, Place{}, program, args)
}

// command is Command placed by place (Placement), whose arguments come
// after ckpt's own.
func (e *External) command(ranks, nodes int, names []string, place Place, program string, args []string) []string {
	n := fmt.Sprint(ranks)
	var cmd []string
	switch {
	case e.Kind == LauncherSrun:
		// A rank's non-zero exit ends the step (ckpt's ranks would see
		// the job fail and exit anyway, more slowly).
		cmd = []string{"-n", n, "--kill-on-bad-exit=1", "--export=" + strings.Join(append([]string{"ALL"}, names...), ",")}
		if e.JobID != "" {
			// A step of the allocation ckpt holds (Hold).
			cmd = append([]string{"--jobid=" + e.JobID}, cmd...)
		}
		switch {
		case place.Pinned:
			// Task r on the r-th host of SLURM_HOSTFILE (Placement);
			// --nodes, their number, overrides SLURM_NNODES inside an
			// allocation, as below.
			cmd = append(cmd, fmt.Sprintf("--nodes=%d", place.Hosts))
		case nodes > 0:
			// Each of the job's nodes is one Slurm node, holding the
			// ranks NodeOf gives it: srun's block distribution puts
			// consecutive tasks on a node, and --ntasks-per-node makes
			// the counts NodeOf's where they are equal (srun ignores it
			// otherwise, and its default then puts the extra tasks on
			// the first nodes, as NodeOf does). So a Slurm node's loss is
			// one of the job's nodes lost, which its redundancy
			// rebuilds, and --exclude takes that node out. Inside an
			// allocation --nodes also overrides SLURM_NNODES, which
			// would ask for every node of the allocation, the excluded
			// ones too. --launcher-args come after, and so win.
			cmd = append(cmd, fmt.Sprintf("--nodes=%d", nodes), "--distribution=block")
			if ranks%nodes == 0 {
				cmd = append(cmd, fmt.Sprintf("--ntasks-per-node=%d", ranks/nodes))
			}
		}
	case e.Flavor == Hydra:
		cmd = []string{"-np", n}
		if len(names) > 0 {
			cmd = append(cmd, "-genvlist", strings.Join(names, ","))
		}
	default:
		// Ranks of a small test machine outnumber its cores.
		cmd = []string{"-np", n, "--oversubscribe"}
		if e.Root {
			cmd = append(cmd, "--allow-run-as-root")
		}
		for _, v := range names {
			cmd = append(cmd, "-x", v)
		}
	}
	user, _ := e.userArgs(place)
	placeArgs := place.Args
	if e.Kind == LauncherSrun {
		placeArgs, user = mergeExcludes(placeArgs, user)
	}
	cmd = append(append(cmd, placeArgs...), user...)
	return append(append(cmd, program), args...)
}

// mergeExcludes gives srun one --exclude holding both the nodes ckpt
// excludes (place, after a node's loss) and those the user's
// --launcher-args exclude (--exclude=L, --exclude L, -x L, -xL): srun
// takes the last of a repeated option, so the user's, which come after
// ckpt's, would otherwise put a failed node back into the next launch.
func mergeExcludes(place, user []string) (placeOut, userOut []string) {
	var nodes []string
	take := func(args []string) (rest []string) {
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case strings.HasPrefix(a, "--exclude="):
				nodes = append(nodes, strings.Split(strings.TrimPrefix(a, "--exclude="), ",")...)
			case (a == "--exclude" || a == "-x") && i+1 < len(args):
				nodes = append(nodes, strings.Split(args[i+1], ",")...)
				i++
			case strings.HasPrefix(a, "-x") && len(a) > 2:
				nodes = append(nodes, strings.Split(a[2:], ",")...)
			default:
				rest = append(rest, a)
			}
		}
		return rest
	}
	placeOut, userOut = take(place), take(user)
	var merged []string
	for _, n := range nodes {
		if n != "" && !slices.Contains(merged, n) {
			merged = append(merged, n)
		}
	}
	if len(merged) > 0 {
		placeOut = append(placeOut, "--exclude="+strings.Join(merged, ","))
	}
	return placeOut, userOut
}

// userArgs are the launcher's arguments (--launcher-args) that a launch
// placed by place keeps, and those it drops (withoutHosts: mpirun's own
// hosts when ckpt gives it a host file, and its mapping options when the
// launch is pinned). srun's are kept whole.
func (e *External) userArgs(place Place) (kept, dropped []string) {
	if e.Kind == LauncherSrun || place.File == "" {
		return e.Args, nil
	}
	return withoutHosts(e.Args, place.Pinned, e.Flavor)
}

// Place is where a launch's ranks go: the launcher's arguments (after
// ckpt's own) and variables (added to its environment), and the file
// they name, if any, for the caller to remove once the launcher ended.
type Place struct {
	Args, Env []string
	File      string
	// Pinned: each rank goes to the host the launch's Pin gave it, on
	// Hosts distinct hosts.
	Pinned bool
	Hosts  int
	// Note says why a pin was not followed ("" if it was, or if there
	// was none).
	Note string
}

// Placement is where ranks go, given the hosts of a launch (Spec's
// Hosts, ExcludeHosts and Pin).
//
// Pinned (pin[r] rank r's host), each rank goes to its host: srun's
// arbitrary distribution (--distribution=arbitrary, and SLURM_HOSTFILE
// naming a file of one host per task, in task order: Slurm lays the -n
// tasks out in the file's order, and --nodes is the number of distinct
// hosts in it); Open MPI's sequential mapper (--map-by seq, and
// --hostfile naming a file of one host per rank: rank r on line r's
// host, whatever the slot counts). Not Open MPI's rankfile, which binds
// every rank to the cores its slot= names, and so needs each host's core
// count, which ckpt does not know (slot=* binds all to the first core).
// Hydra has no per-rank mapping: its host file (-f) gives each line's
// host as many consecutive ranks as its count says, which pins a layout
// whose hosts hold consecutive ranks; any other (after a shrink) is not
// pinned, and Note says so.
//
// Not pinned, it keeps a launch off the hosts whose nodes failed: srun's
// --exclude=HOST,...; mpirun's host file (Open MPI's --hostfile, Hydra's
// -f) of the hosts to use with ranks/hosts slots each. Nothing without
// exclusions: the launcher places the ranks as it does by default.
func (e *External) Placement(ranks int, hosts, exclude, pin []string) (Place, error) {
	if len(pin) == ranks && ranks > 0 {
		p, ok, err := e.pinned(pin)
		if ok || err != nil {
			return p, err
		}
		q, err := e.excluding(ranks, hosts, exclude)
		q.Note = p.Note
		return q, err
	}
	return e.excluding(ranks, hosts, exclude)
}

// pinned is Placement with a pin; ok false if the launcher cannot follow
// it (Note says why).
func (e *External) pinned(pin []string) (p Place, ok bool, err error) {
	var b strings.Builder
	switch {
	case e.Kind == LauncherSrun || e.Flavor == OpenMPI:
		for _, h := range pin {
			fmt.Fprintln(&b, h)
		}
	default: // Hydra
		for r, h := range pin {
			if r > 0 && h == pin[r-1] {
				continue
			}
			if slices.Contains(pin[:r], h) {
				return Place{Note: fmt.Sprintf("not pinned: host %s holds ranks that are not consecutive, which %s's host file cannot say", h, Hydra)}, false, nil
			}
			n := 1
			for r+n < len(pin) && pin[r+n] == h {
				n++
			}
			fmt.Fprintf(&b, "%s:%d\n", h, n)
		}
	}
	file, err := writeTemp(b.String())
	if err != nil {
		return Place{}, false, err
	}
	p = Place{File: file, Pinned: true, Hosts: len(distinct(pin))}
	switch {
	case e.Kind == LauncherSrun:
		p.Args, p.Env = []string{"--distribution=arbitrary"}, []string{"SLURM_HOSTFILE=" + file}
	case e.Flavor == Hydra:
		p.Args = []string{"-f", file}
	default:
		p.Args = []string{"--hostfile", file, "--map-by", "seq"}
	}
	return p, true, nil
}

// excluding is Placement without a pin.
func (e *External) excluding(ranks int, hosts, exclude []string) (Place, error) {
	if len(exclude) == 0 {
		return Place{}, nil
	}
	if e.Kind == LauncherSrun {
		return Place{Args: []string{"--exclude=" + strings.Join(exclude, ",")}}, nil
	}
	if len(hosts) == 0 {
		return Place{}, fmt.Errorf("launch: every host the job ran on failed (%s): mpirun has none left", strings.Join(exclude, ","))
	}
	slots := (ranks + len(hosts) - 1) / len(hosts)
	var b strings.Builder
	for _, h := range hosts {
		if e.Flavor == Hydra {
			fmt.Fprintf(&b, "%s:%d\n", h, slots)
		} else {
			fmt.Fprintf(&b, "%s slots=%d\n", h, slots)
		}
	}
	file, err := writeTemp(b.String())
	if err != nil {
		return Place{}, err
	}
	flag := "--hostfile"
	if e.Flavor == Hydra {
		flag = "-f"
	}
	return Place{Args: []string{flag, file}, File: file}, nil
}

// writeTemp writes s to a new file and returns its path.
func writeTemp(s string) (string, error) {
	f, err := os.CreateTemp("", "ckpt-hosts-")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Start runs the launcher once for every rank of s. Every rank connects
// to the same coordinator (CoordFor(0)): a sub-coordinator per node
// (tree mode) would need an address per rank.
func (e *External) Start(ctx context.Context, s Spec) (Ranks, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	job := s.Job
	job.Rank, job.Size, job.Node, job.Cache = 0, 0, "", "" // each rank's own: derived
	job.Nodes, job.CacheRoot = s.Nodes, s.CacheRoot
	job.Coord = s.CoordFor(0)
	vars := append(job.Encode(), s.Env...)
	var names []string
	for _, kv := range vars {
		if k, _, ok := strings.Cut(kv, "="); ok && !containsName(names, k) {
			names = append(names, k)
		}
	}
	place, err := e.Placement(s.Ranks, s.Hosts, s.ExcludeHosts, s.Pin)
	if err != nil {
		return nil, err
	}
	hostfile := place.File
	cmd := exec.Command(e.Path, e.command(s.Ranks, blockNodes(s.Nodes, s.Ranks), names, place, s.Program, s.Args)...)
	cmd.Env = append(append(e.environ(os.Environ()), vars...), place.Env...)
	w := s.Output(-1)
	cmd.Stdout, cmd.Stderr = w, w
	if place.Note != "" {
		fmt.Fprintf(w, "ckpt: %s\n", place.Note)
	}
	if _, dropped := e.userArgs(place); len(dropped) > 0 {
		why := "ckpt's host file says where every rank goes"
		if place.Pinned {
			why = "ckpt pins every rank to its node's host"
		}
		fmt.Fprintf(w, "ckpt: --launcher-args %s left out of this launch: %s\n", strings.Join(dropped, " "), why)
	}
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		if hostfile != "" {
			os.Remove(hostfile)
		}
		return nil, fmt.Errorf("launch: %s: %w", e.Kind, err)
	}
	x := &externalRanks{e: e, cmd: cmd, ranks: s.Ranks, lookup: s.Lookup,
		ended: make(chan Ended, 1), done: make(chan struct{})}
	x.host, _ = os.Hostname()
	go func() {
		err := cmd.Wait()
		if hostfile != "" {
			os.Remove(hostfile)
		}
		close(x.done)
		st, sig := exitStatus(cmd.ProcessState, err)
		if st > 128 && st < 128+65 {
			// The launcher's way of saying a rank died of signal N.
			st, sig = -1, syscall.Signal(st-128)
		}
		x.ended <- Ended{Rank: -1, Err: err, Status: st, Signal: sig}
	}()
	return x, nil
}

// blockNodes is the number of nodes when ranks fill nodes in blocks
// (NodeOf), as compactNodes gives them; 0 when the layout is one node per
// rank with some node repeated (after a shrink), which no count of nodes
// describes.
func blockNodes(nodes []string, ranks int) int {
	if len(nodes) == 0 || len(nodes) > ranks || len(distinct(nodes)) != len(nodes) {
		return 0
	}
	return len(nodes)
}

// otherIdentities are the rank variables of the launchers other than
// kind, which a rank could take for its own (jobenv.Identity takes the
// first pair set, Open MPI's before PMI's before Slurm's): srun's ranks
// an OMPI_COMM_WORLD_RANK that ckpt run inherited from an mpirun it runs
// under; mpirun's ranks a batch script's SLURM_PROCID=0, were their
// MPI's own variables missing.
var otherIdentities = map[string][]string{
	LauncherMPIRun: {"SLURM_PROCID", "SLURM_NTASKS"},
	LauncherSrun:   {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"},
}

// environ is the launcher's environment: environ without the other
// launchers' rank variables.
func (e *External) environ(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !containsName(otherIdentities[e.Kind], k) {
			out = append(out, kv)
		}
	}
	return out
}

func containsName(names []string, n string) bool {
	for _, v := range names {
		if v == n {
			return true
		}
	}
	return false
}

// externalRanks are the ranks of one run of an External launcher.
type externalRanks struct {
	e      *External
	cmd    *exec.Cmd
	ranks  int
	host   string // this host's name
	lookup func(key string) ([]byte, bool)
	ended  chan Ended
	done   chan struct{} // closed when the launcher's process ended
	once   sync.Once
}

func (x *externalRanks) Procs() int          { return 1 }
func (x *externalRanks) Ended() <-chan Ended { return x.ended }

// proc is where rank r runs, as it published when it joined.
func (x *externalRanks) proc(r int) (jobenv.Proc, error) {
	v, ok := x.lookup(jobenv.KeyProc(r))
	if !ok {
		return jobenv.Proc{}, fmt.Errorf("rank %d: %w", r, ErrNotJoined)
	}
	p, err := jobenv.DecodeProc(v)
	if err != nil {
		return p, err
	}
	if !SameHost(p.Host, x.host) {
		return p, fmt.Errorf("rank %d runs on host %s, not on this one (%s): a failure of a rank on another host needs a remote kill (ssh, or the batch system's), which ckpt does not do", r, p.Host, x.host)
	}
	return p, nil
}

// signal kills rank r's process, or stops it (hang).
func (x *externalRanks) signal(r int, hang bool) error {
	p, err := x.proc(r)
	if err != nil {
		return err
	}
	if err := signalPID(p.PID, hang); err != nil {
		return fmt.Errorf("rank %d (pid %d): %w", r, p.PID, err)
	}
	return nil
}

func (x *externalRanks) Kill(r int) error { return x.signal(r, false) }
func (x *externalRanks) Stop(r int) error { return x.signal(r, true) }

// KillAll kills the ranks that said where they run, and asks the launcher
// to end the others (SIGTERM: mpirun and srun kill their ranks and exit);
// a launcher still running after TermGrace has its process group killed.
func (x *externalRanks) KillAll() {
	x.once.Do(func() {
		for r := range x.ranks {
			x.signal(r, false)
		}
		terminate(x.cmd)
		grace := x.e.TermGrace
		if grace == 0 {
			grace = 5 * time.Second
		}
		go func() {
			select {
			case <-x.done:
			case <-time.After(grace):
				kill(x.cmd)
			}
		}()
	})
}

// NewLauncher is the launcher ckpt run --launcher names (local, mpirun or
// srun), with --launcher-args (shell words, SplitWords) for mpirun or
// srun. Its errors name the flag and the value: an unknown name, words
// that do not split, a launcher not on PATH.
func NewLauncher(name, args string) (Launcher, error) {
	words, err := SplitWords(args)
	if err != nil {
		return nil, fmt.Errorf("--launcher-args: %v", err)
	}
	switch name {
	case LauncherLocal:
		if len(words) > 0 {
			return nil, fmt.Errorf("--launcher-args %q: the local launcher takes none (they are for --launcher %s or %s)", args, LauncherMPIRun, LauncherSrun)
		}
		return Local{}, nil
	case LauncherMPIRun, LauncherSrun:
		return NewExternal(name, words)
	}
	return nil, fmt.Errorf("--launcher %q: want %s, %s or %s", name, LauncherLocal, LauncherMPIRun, LauncherSrun)
}
