package jobenv

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/units"
)

// The variables of the launcher–rank contract, in Env's order; Vars says
// what each means, who sets it and its default (docs/RUNTIME.md's table).
const (
	VarCoord           = "CKPT_COORD"            // the coordinator's host:port
	VarToken           = "CKPT_TOKEN"            // the job's secret, new per launch
	VarIncarnation     = "CKPT_INCARNATION"      // the launch's number
	VarRank            = "CKPT_RANK"             // this process's rank
	VarSize            = "CKPT_SIZE"             // the job's number of ranks
	VarNode            = "CKPT_NODE"             // the node: ranks of one share its cache
	VarDomain          = "CKPT_DOMAIN"           // the failure domain
	VarCache           = "CKPT_CACHE"            // the node's cache directory
	VarNodes           = "CKPT_NODES"            // the job's nodes, for ranks that derive their node
	VarCacheRoot       = "CKPT_CACHE_ROOT"       // the node caches' root, for ranks that derive their cache
	VarCacheDurability = "CKPT_CACHE_DURABILITY" // node or process
	VarCompress        = "CKPT_COMPRESS"         // auto or off
	VarRedundancy      = "CKPT_REDUNDANCY"       // single, partner, xor:S, rs:K+M
	VarShared          = "CKPT_SHARED"           // the shared tier's location
	VarSharedBandwidth = "CKPT_SHARED_BANDWIDTH" // this rank's share of the shared tier, bytes/s
	VarInterval        = "CKPT_INTERVAL"         // the checkpoint policy
	VarFlushEvery      = "CKPT_FLUSH_EVERY"      // K, or auto:MTTI
	VarFlushBusy       = "CKPT_FLUSH_BUSY"       // skip or wait
	VarFlushPrior      = "CKPT_FLUSH_PRIOR"      // the earlier launches' FlushStats, JSON
	VarStage           = "CKPT_STAGE"            // staging servers, host:port,...
	VarStageToken      = "CKPT_STAGE_TOKEN"      // the staging servers' secret
	VarAdvertise       = "CKPT_ADVERTISE"        // the host peers dial to reach this rank
	VarTLSCA           = "CKPT_TLS_CA"           // the job's CA certificate (ckpt run --tls)
	VarTLSCert         = "CKPT_TLS_CERT"         // the job's certificate
	VarTLSKey          = "CKPT_TLS_KEY"          // its private key
	VarStrategy        = "CKPT_STRATEGY"         // coordinated or uncoordinated
)

// Checkpointing strategies (VarStrategy).
const (
	// StrategyCoordinated: every rank checkpoints at the same step, the
	// messages in flight drained, and a failure relaunches the whole job.
	StrategyCoordinated = "coordinated"
	// StrategyUncoordinated: every rank checkpoints on its own and logs
	// what it receives at its protector; a failed rank recovers alone
	// (docs/MESSAGE-LOGGING.md).
	StrategyUncoordinated = "uncoordinated"
)

// Variables ckpt reads that are not part of what a launcher passes a rank.
const (
	// A rank's process restarted alone while the job runs (the
	// uncoordinated strategy, docs/MESSAGE-LOGGING.md): the launcher
	// sets it on that process only.
	VarRecoverAlone = "CKPT_RECOVER_ALONE"
	VarDebug        = "CKPT_DEBUG"       // ranks log their staging client's steps
	VarS3Endpoint   = "CKPT_S3_ENDPOINT" // package s3 spells it itself (a foundation)
	VarMinio        = "CKPT_MINIO"       // package s3test spells it itself
	VarRequireS3    = "CKPT_REQUIRE_S3"  // package s3test spells it itself
	VarRequireMPI   = "CKPT_REQUIRE_MPI" // the C API's MPI tests fail rather than skip
	// The tests of nodes as hosts fail rather than skip without network
	// namespaces (package netnstest).
	VarRequireNetns = "CKPT_REQUIRE_NETNS"
	// The tests of the srun launcher against a real Slurm cluster fail
	// rather than skip when it cannot start (package slurmtest).
	VarRequireSlurm = "CKPT_REQUIRE_SLURM"
	// Transparent checkpointing (docs/TRANSPARENT.md): the criu binary to
	// use, and the tests that fail rather than skip without one.
	VarCRIU        = "CKPT_CRIU"
	VarRequireCRIU = "CKPT_REQUIRE_CRIU"
	// VarCRIUSuite is scripts/criu.sh's: named by Go only in messages.
	VarCRIUSuite = "CKPT_CRIU_SUITE"
	// The SCR-compatible C API's (docs/C-API.md).
	VarSCRNodes   = "CKPT_SCR_NODES"    // simulated nodes on one host
	VarSCREndTime = "CKPT_SCR_END_TIME" // the job's end, for SCR_HALT_SECONDS
	VarLibSCR     = "CKPT_LIBSCR"       // the libscr.so the Python module loads
)

// Var documents one variable.
type Var struct {
	Name    string
	Meaning string
	SetBy   string // who sets it
	Default string // what a rank does without it
	// Contract: a field of Env, passed by the launcher to every rank
	// (else a variable of the user's or the tests').
	Contract bool
}

// Vars documents every CKPT_ variable, the contract's in Env.Encode's
// order first.
var Vars = []Var{
	{VarCoord, "the job's coordinator, host:port", "ckpt run; ckpt coordinator prints it", "none: the process is a job of one rank", true},
	{VarToken, "the job's secret, which the coordinator and the ranks' peers check", "ckpt run (new for every launch); ckpt coordinator", "empty (read only with " + VarCoord + ")", true},
	{VarIncarnation, "the launch's number: 0, then one more per relaunch", "ckpt run; ckpt coordinator --incarnation", "0 (read only with " + VarCoord + ")", true},
	{VarRank, "this process's rank, 0 to " + VarSize + "-1", "ckpt run", "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, else 0", true},
	{VarSize, "the job's number of ranks", "ckpt run", "OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS, else 1", true},
	{VarNode, "the node this rank runs on: ranks of one node share its cache", "ckpt run (node0, node1, ...)", "the host name", true},
	{VarDomain, "the rank's failure domain (a rack, a switch): redundancy sets never put two members in one", "the user", "the node", true},
	{VarCache, "the node's cache directory", "ckpt run (the job's directory/nodeN)", "ckpt-cache/NODE under the temp directory", true},
	{VarNodes, "the job's nodes, M (node0 to nodeM-1) or a list NAME,NAME,...: without " + VarNode + " a rank's node is the one its rank falls on, ranks filling nodes in blocks (rank r on node r*M/" + VarSize + ")", "ckpt run --launcher mpirun or srun (which cannot give each rank its own " + VarNode + ")", "none: " + VarNode + "'s default", true},
	{VarCacheRoot, "the node caches' root: without " + VarCache + " a rank's cache is " + VarCacheRoot + "/NODE", "ckpt run --launcher mpirun or srun (the job's directory)", "none: " + VarCache + "'s default", true},
	{VarCacheDurability, "what a checkpoint committed in the cache survives: node (synced) or process (not synced)", "ckpt run --cache-durability", "node", true},
	{VarCompress, "compression of checkpoint files before redundancy: auto (each file compressed when a sample of it says it pays) or off", "ckpt run --compress", "off", true},
	{VarRedundancy, "protection of cached checkpoints: single, partner, xor:S, rs:K+M", "ckpt run --redundancy", "xor over the nodes, at most 8", true},
	{VarShared, "the shared tier: a directory or s3://BUCKET/PREFIX", "ckpt run --shared", "none", true},
	{VarSharedBandwidth, "this rank's share of the shared tier's bandwidth, such as 200MB/s", "ckpt run --shared-bandwidth (divided by the ranks)", "no cap", true},
	{VarInterval, "when to checkpoint: 100steps, 30s, auto, auto:MTTI, none", "ckpt run --interval; ckpt coordinator --interval", "none: the application decides", true},
	{VarFlushEvery, "flush every K-th checkpoint to the shared tier, or auto:MTTI", "ckpt run --flush-every", "1", true},
	{VarFlushBusy, "a non-blocking flush due while the previous one runs: skip or wait", "ckpt run --flush-busy", "skip", true},
	{VarFlushPrior, "what the job's earlier launches' flushes did (FlushStats, JSON), for --flush-every auto", "ckpt run, from the launches before", "nothing measured", true},
	{VarStage, "staging servers, host:port,host:port: flushes are non-blocking", "ckpt run --staging-servers", "none: flushes are blocking", true},
	{VarStageToken, "the secret the staging servers accept (one for the whole job)", "ckpt run; the user for ckpt stage --token", "the coordinator's token", true},
	{VarAdvertise, "the host other ranks dial to reach this one", "the user", "loopback when the coordinator is on loopback, else the host name", true},
	{VarTLSCA, "the job's own CA certificate (PEM): the job's traffic is mutual TLS, and only a peer with a certificate it signed takes part", "ckpt run --tls (made at launch, in the job's directory, mode 0600)", "no TLS (plain TCP, token only)", true},
	{VarTLSCert, "the job's certificate (PEM), which every process of the job presents; with " + VarTLSCA + " and " + VarTLSKey, "ckpt run --tls", "no TLS", true},
	{VarTLSKey, "the private key of " + VarTLSCert + " (PEM), readable by the job's user only", "ckpt run --tls", "no TLS", true},
	{VarStrategy, "the checkpointing strategy: coordinated (every rank at the same step, a failure relaunches the whole job) or uncoordinated (each rank on its own, messages logged by their receiver at its protector, a failed rank recovers alone: docs/MESSAGE-LOGGING.md)", "ckpt run --strategy", "coordinated", true},
	{VarRecoverAlone, "1: this process restarts a rank lost while its job runs, alone (uncoordinated strategy): it recovers from its own checkpoint and message log while the other ranks go on, and exits with status 66 when they cannot serve (the launcher then relaunches the whole job)", "the local launcher under the uncoordinated strategy, on the rank's next process only", "a rank of a new launch", false},
	{VarDebug, "any value: ranks log their staging client's steps to standard error", "the user", "no log", false},
	{VarS3Endpoint, "the S3 endpoint of s3:// locations", "the user", "AWS_ENDPOINT_URL_S3, else AWS's", false},
	{VarMinio, "the minio server binary the S3 tests run", "the user, CI", "minio on PATH", false},
	{VarRequireS3, "1: the S3 tests fail rather than skip without minio", "the user, CI", "skip", false},
	{VarRequireMPI, "1: the C API's tests fail rather than skip without MPI", "the user, CI", "skip", false},
	{VarRequireNetns, "1: the tests of nodes as hosts fail rather than skip without network namespaces (root, iproute2)", "the user, CI", "skip", false},
	{VarRequireSlurm, "1: the tests of ckpt run --launcher srun against a real Slurm cluster on this machine fail rather than skip when it cannot start (root, Slurm and MUNGE: scripts/slurm.sh)", "the user, CI", "skip", false},
	{VarCRIU, "the criu binary transparent checkpointing runs (scripts/criu.sh prints one)", "the user, CI", "criu in PATH", false},
	{VarRequireCRIU, "1: the transparent checkpointing tests fail rather than skip without a working CRIU", "the user, CI", "skip", false},
	{VarCRIUSuite, "the Debian suite whose CRIU scripts/criu.sh fetches when the system's is older than 4.1: trixie (4.1) or sid (4.2, needed for TCP connections: ckpt run --transparent --netns)", "the user, CI", "trixie", false},
	{VarSCRNodes, "K: the SCR API puts rank r on the simulated node node<r mod K>", "the user, tests", "the host name", false},
	{VarSCREndTime, "the job's end (Unix seconds) for SCR_HALT_SECONDS", "the user, tests", "SCR_END_TIME, SLURM_JOB_END_TIME, else none", false},
	{VarLibSCR, "the libscr.so the SCR Python module loads", "the user, tests", "../../libscr.so from the module's directory", false},
}

// Env is everything a launcher passes a rank. The zero value of a field
// means unset (its variable is absent); Encode writes the set ones and
// FromEnviron reads them back.
type Env struct {
	Coord       string
	Token       string
	Incarnation uint64 // written whenever Coord is set
	// Rank and Size are written together when Size > 0.
	Rank, Size int
	Node       string
	Domain     string
	Cache      string
	// Nodes and CacheRoot are the mapping of ranks a launcher that cannot
	// give each rank its own Node and Cache passes instead (mpirun, srun):
	// Lookup derives a rank's Node from its rank and Nodes, and its Cache
	// from CacheRoot and its Node (Place).
	Nodes           []string
	CacheRoot       string
	CacheDurability string // "node" or "process"
	Compress        string // CompressAuto, CompressOff or ""
	Redundancy      string // checked by the store, which knows the schemes
	Shared          string
	SharedBandwidth float64 // bytes/s
	Interval        *policy.Policy
	FlushEvery      *policy.FlushEvery
	FlushBusy       string     // FlushSkip or FlushWait
	FlushPrior      FlushStats // not written if it does not encode
	Stage           []string   // staging servers' addresses
	StageToken      string
	Advertise       string
	// TLS names the job's TLS files: all three or none (no TLS).
	TLS jobtls.Files
	// Strategy is StrategyCoordinated, StrategyUncoordinated or "".
	Strategy string
}

// Flush busy policies (VarFlushBusy): the flush scheduler's.
const (
	FlushSkip = flush.Skip
	FlushWait = flush.Wait
)

// Compression settings (VarCompress).
const (
	CompressAuto = "auto" // each file compressed when a sample says it pays
	CompressOff  = "off"  // every file stored as written
)

// Encode returns the environment entries (NAME=value) of the set fields,
// in the order of Vars.
func (e Env) Encode() []string {
	var out []string
	add := func(name, v string) { out = append(out, name+"="+v) }
	str := func(name, v string) {
		if v != "" {
			add(name, v)
		}
	}
	str(VarCoord, e.Coord)
	str(VarToken, e.Token)
	if e.Coord != "" {
		add(VarIncarnation, strconv.FormatUint(e.Incarnation, 10))
	}
	if e.Size > 0 {
		add(VarRank, strconv.Itoa(e.Rank))
		add(VarSize, strconv.Itoa(e.Size))
	}
	str(VarNode, e.Node)
	str(VarDomain, e.Domain)
	str(VarCache, e.Cache)
	if len(e.Nodes) > 0 {
		add(VarNodes, strings.Join(e.Nodes, ","))
	}
	str(VarCacheRoot, e.CacheRoot)
	str(VarCacheDurability, e.CacheDurability)
	str(VarCompress, e.Compress)
	str(VarRedundancy, e.Redundancy)
	str(VarShared, e.Shared)
	if e.SharedBandwidth > 0 {
		add(VarSharedBandwidth, FormatBandwidth(e.SharedBandwidth))
	}
	if e.Interval != nil {
		add(VarInterval, e.Interval.String())
	}
	if e.FlushEvery != nil {
		add(VarFlushEvery, e.FlushEvery.String())
	}
	str(VarFlushBusy, e.FlushBusy)
	if e.FlushPrior != (FlushStats{}) {
		if b, err := e.FlushPrior.Encode(); err == nil {
			add(VarFlushPrior, string(b))
		}
	}
	if len(e.Stage) > 0 {
		add(VarStage, strings.Join(e.Stage, ","))
	}
	str(VarStageToken, e.StageToken)
	str(VarAdvertise, e.Advertise)
	str(VarTLSCA, e.TLS.CA)
	str(VarTLSCert, e.TLS.Cert)
	str(VarTLSKey, e.TLS.Key)
	str(VarStrategy, e.Strategy)
	return out
}

// FormatBandwidth writes bytes/s as VarSharedBandwidth and ckpt stage's
// --shared-bandwidth take it.
func FormatBandwidth(bw float64) string { return fmt.Sprintf("%gB/s", bw) }

// Error is a variable whose value does not parse.
type Error struct {
	Name, Value string
	Reason      string
}

func (e *Error) Error() string { return fmt.Sprintf("%s=%q: %s", e.Name, e.Value, e.Reason) }

// FromEnviron reads the contract from environ (os.Environ's form; a later
// entry of a name wins, as for exec). Every value is checked: the first
// bad one is an *Error naming the variable and its value.
func FromEnviron(environ []string) (Env, error) {
	m := make(map[string]string)
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return Lookup(func(name string) (string, bool) { v, ok := m[name]; return v, ok })
}

// Lookup is FromEnviron over a lookup function such as os.LookupEnv.
func Lookup(lookup func(string) (string, bool)) (Env, error) {
	get := func(name string) string { v, _ := lookup(name); return v }
	bad := func(name, v, reason string) (Env, error) {
		return Env{}, &Error{Name: name, Value: v, Reason: reason}
	}
	e := Env{Coord: get(VarCoord), Token: get(VarToken), Node: get(VarNode), Domain: get(VarDomain),
		Cache: get(VarCache), CacheRoot: get(VarCacheRoot), Redundancy: get(VarRedundancy), Shared: get(VarShared),
		StageToken: get(VarStageToken), Advertise: get(VarAdvertise),
		TLS: jobtls.Files{CA: get(VarTLSCA), Cert: get(VarTLSCert), Key: get(VarTLSKey)}}
	if n := btoi(e.TLS.CA != "") + btoi(e.TLS.Cert != "") + btoi(e.TLS.Key != ""); n != 0 && n != 3 {
		name := VarTLSCA
		switch {
		case e.TLS.Cert == "":
			name = VarTLSCert
		case e.TLS.Key == "":
			name = VarTLSKey
		}
		return bad(name, "", "missing: "+VarTLSCA+", "+VarTLSCert+" and "+VarTLSKey+" go together")
	}
	if v := get(VarIncarnation); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return bad(VarIncarnation, v, "not a whole number")
		}
		e.Incarnation = n
	}
	rank, hasRank := lookup(VarRank)
	size, hasSize := lookup(VarSize)
	switch {
	case hasRank && !hasSize:
		return bad(VarRank, rank, "without "+VarSize)
	case hasSize && !hasRank:
		return bad(VarSize, size, "without "+VarRank)
	case hasSize:
		n, err := strconv.Atoi(size)
		if err != nil || n < 1 {
			return bad(VarSize, size, "want a whole number ≥ 1")
		}
		r, err := strconv.Atoi(rank)
		if err != nil || r < 0 || r >= n {
			return bad(VarRank, rank, fmt.Sprintf("want a whole number from 0 to %d (%s-1)", n-1, VarSize))
		}
		e.Rank, e.Size = r, n
	}
	if v := get(VarNodes); v != "" {
		if e.Nodes = ParseNodes(v); e.Nodes == nil {
			return bad(VarNodes, v, "want a number of nodes ≥ 1 or a list of node names NAME,NAME,...")
		}
		if e.Node == "" {
			rank, size := Identity(e, lookup)
			if len(e.Nodes) > size {
				return bad(VarNodes, v, fmt.Sprintf("%d nodes for %d ranks: at most one node per rank", len(e.Nodes), size))
			}
			e.Node = e.Nodes[NodeOf(rank, size, len(e.Nodes))]
		}
	}
	if e.Cache == "" && e.CacheRoot != "" && e.Node != "" {
		e.Cache = filepath.Join(e.CacheRoot, e.Node)
	}
	switch v := get(VarCacheDurability); v {
	case "", "node", "process":
		e.CacheDurability = v
	default:
		return bad(VarCacheDurability, v, "want node or process")
	}
	if v := get(VarCompress); CheckCompress(v) != nil {
		return bad(VarCompress, v, "want auto or off")
	} else {
		e.Compress = v
	}
	if v := get(VarSharedBandwidth); v != "" {
		bw, err := units.ParseBandwidth(v)
		if err != nil || bw <= 0 {
			return bad(VarSharedBandwidth, v, "want a bandwidth such as 200MB/s")
		}
		e.SharedBandwidth = bw
	}
	if v, ok := lookup(VarInterval); ok && v != "" {
		p, err := policy.Parse(v)
		if err != nil {
			return bad(VarInterval, v, err.Error())
		}
		e.Interval = &p
	}
	if v := get(VarFlushEvery); v != "" {
		f, err := policy.ParseFlushEvery(v)
		if err != nil {
			return bad(VarFlushEvery, v, err.Error())
		}
		e.FlushEvery = &f
	}
	switch v := get(VarFlushBusy); v {
	case "", FlushSkip, FlushWait:
		e.FlushBusy = v
	default:
		return bad(VarFlushBusy, v, "want "+FlushSkip+" or "+FlushWait)
	}
	if v := get(VarFlushPrior); v != "" {
		f, err := DecodeFlushStats([]byte(v))
		if err != nil {
			return bad(VarFlushPrior, v, err.Error())
		}
		e.FlushPrior = f
	}
	switch v := get(VarStrategy); v {
	case "", StrategyCoordinated, StrategyUncoordinated:
		e.Strategy = v
	default:
		return bad(VarStrategy, v, "want "+StrategyCoordinated+" or "+StrategyUncoordinated)
	}
	if v := get(VarStage); v != "" {
		e.Stage = ParseStage(v)
		if len(e.Stage) == 0 || slices.ContainsFunc(e.Stage, func(a string) bool { return !strings.Contains(a, ":") }) {
			return bad(VarStage, v, "want host:port,host:port")
		}
	}
	return e, nil
}

// LookupOnly is Lookup of the variables use marks true: every other one
// reads as unset. A reader marks those its options leave to the
// environment, so that a value it does not use is not even checked.
//
// A node and a cache a rank derives (VarNodes, VarCacheRoot) are read with
// what they derive from: using VarNode also reads VarNodes, using VarCache
// also reads VarCacheRoot and the node; when the node is derived (VarNodes
// set, VarNode not), the rank and size are read too (VarRank, VarSize, else the launcher's own, which are
// not CKPT_ variables and always pass).
func LookupOnly(lookup func(string) (string, bool), use map[string]bool) (Env, error) {
	use = maps.Clone(use)
	if use[VarCache] {
		use[VarCacheRoot], use[VarNode] = true, true
	}
	if use[VarNode] {
		use[VarNodes] = true
		node, _ := lookup(VarNode)
		if v, _ := lookup(VarNodes); v != "" && node == "" {
			use[VarRank], use[VarSize] = true, true
		}
	}
	return Lookup(func(name string) (string, bool) {
		if !use[name] && strings.HasPrefix(name, "CKPT_") {
			return "", false
		}
		return lookup(name)
	})
}

// NodeOf is the node rank r of a job of ranks on nodes runs on: ranks
// fill nodes in blocks, as a batch scheduler places them (node 0 holds
// ranks 0 to ranks/nodes-1, ...).
func NodeOf(r, ranks, nodes int) int { return r * nodes / ranks }

// NodeName is the name of simulated node i: node<i>.
func NodeName(i int) string { return "node" + strconv.Itoa(i) }

// ParseNodes reads VarNodes: a count M (node0 to nodeM-1) or a list of
// names separated by commas; nil if it is neither.
func ParseNodes(v string) []string {
	if m, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if m < 1 {
			return nil
		}
		out := make([]string, m)
		for i := range out {
			out[i] = NodeName(i)
		}
		return out
	}
	out := ParseStage(v)
	for _, n := range out {
		if strings.ContainsAny(n, "/ \t") || n == "." || n == ".." {
			return nil // a node's name is a directory of the cache root
		}
	}
	return out
}

// launcherIdentities are the rank and size variables of the launchers a
// rank may run under without `ckpt run`, in the order they are tried:
// the MPI launchers' before Slurm's. mpirun inside a Slurm allocation
// starts its daemons with srun, so its ranks inherit the daemon's
// SLURM_PROCID (one per node, not theirs); under srun alone an MPI
// launcher's variables are absent, or (srun --mpi=pmi2) the same.
var launcherIdentities = [][2]string{
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMI_RANK", "PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
}

// Identity is a process's rank and size: e's when a launcher set
// VarRank and VarSize (e.Size > 0; Lookup checked them), else the first
// pair of Open MPI's, PMI's and Slurm's variables that is a rank of its
// size (0 ≤ rank < size, both from the one pair), else rank 0 of 1. A
// pair that is not (a stale or broken launcher's) is passed over, as one
// that does not parse: its rank would name no node (NodeOf).
func Identity(e Env, lookup func(string) (string, bool)) (rank, size int) {
	if e.Size > 0 {
		return e.Rank, e.Size
	}
	for _, pair := range launcherIdentities {
		rv, _ := lookup(pair[0])
		nv, _ := lookup(pair[1])
		r, err1 := strconv.Atoi(rv)
		n, err2 := strconv.Atoi(nv)
		if err1 == nil && err2 == nil && r >= 0 && r < n {
			return r, n
		}
	}
	return 0, 1
}

// ParseStage reads a list of staging servers, host:port separated by
// commas (blanks and empty entries ignored).
func ParseStage(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// CheckDurability checks a cache durability: node or process ("" is
// node). The store's ParseDurability says the same.
func CheckDurability(s string) error {
	switch s {
	case "", "node", "process":
		return nil
	}
	return fmt.Errorf("cache durability %q: want node (sync to disk: survives the node's crash) or process (page cache: survives the processes' crash)", s)
}

// CheckCompress checks a compression setting: auto or off ("" is off).
// The store's ParseCompression says the same.
func CheckCompress(s string) error {
	switch s {
	case "", CompressAuto, CompressOff:
		return nil
	}
	return fmt.Errorf("compression %q: want auto (compress each file whose sample says it pays) or off", s)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
