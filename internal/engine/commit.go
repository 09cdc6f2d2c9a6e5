package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/storage"
)

// Reserved file names: a checkpoint's own data, never the application's.
const (
	// parityName is the manifest entry of a rank's redundancy data.
	parityName = "parity"
	// MessagesFile holds the application messages in flight when the
	// checkpoint was taken (written by a Job, delivered again at restart).
	MessagesFile = "ckpt.messages"
)

// Checkpoint is a checkpoint being written by this rank.
type Checkpoint struct {
	e      *Engine
	name   string
	files  []*File
	done   bool
	failed error // why this rank could not write its part (Fail)
}

// File is a file of a checkpoint being written into the node's cache.
type File struct {
	name       string
	w          *hashingWriter // nil for a routed file
	routed     bool           // the application writes the path itself
	path       string         // a routed file's path in the cache
	z          *compressor    // nil: stored as written
	size       int64          // the application's bytes
	hash       manifest.Hash
	form       compress.Form // how the object stores them
	stored     int64         // the object's size and hash, when compressed
	storedHash manifest.Hash
	closed     bool
	err        error
}

// Start begins a checkpoint named name on this rank. It is local; Commit
// is the collective step.
func (e *Engine) Start(name string) (*Checkpoint, error) {
	if err := manifest.ValidName(name); err != nil {
		return nil, fmt.Errorf("ckpt: checkpoint name: %w", err)
	}
	// Writing over a committed checkpoint would destroy it before the new
	// one exists.
	if _, err := e.Cache.Stat(context.Background(), cachetier.ManifestObject(name)); err == nil {
		return nil, fmt.Errorf("ckpt: checkpoint %q already exists in this node's cache; give each checkpoint a new name", name)
	}
	return &Checkpoint{e: e, name: name}, nil
}

// Name is the checkpoint's name.
func (c *Checkpoint) Name() string { return c.name }

func (c *Checkpoint) addFile(file string) error {
	if c.done {
		return fmt.Errorf("ckpt: checkpoint %q is already committed or aborted", c.name)
	}
	if err := manifest.ValidName(file); err != nil {
		return fmt.Errorf("ckpt: file name: %w", err)
	}
	if file == parityName || file == MessagesFile {
		return fmt.Errorf("ckpt: file name %q is reserved for ckpt's own data", file)
	}
	for _, f := range c.files {
		if f.name == file {
			return fmt.Errorf("ckpt: checkpoint %q already has a file %q", c.name, file)
		}
	}
	return nil
}

// WriteReserved writes a file of ckpt's own (a reserved name such as
// MessagesFile) into the checkpoint.
func (c *Checkpoint) WriteReserved(file string, data []byte) error {
	f, err := c.create(file)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Create opens a new file of the checkpoint for writing. Bytes stream
// straight into the node's cache; nothing is held in memory.
//
// With Config.Compress, the file is stored compressed if a sample of its
// first bytes says it pays (compress.go).
func (c *Checkpoint) Create(file string) (*File, error) {
	if err := c.addFile(file); err != nil {
		return nil, err
	}
	f, err := c.create(file)
	if err == nil && c.e.Compress {
		f.z = newCompressor()
	}
	return f, err
}

// create opens a file whose name was checked.
func (c *Checkpoint) create(file string) (*File, error) {
	w, err := c.e.Cache.Create(context.Background(), cachetier.FileObject(c.name, c.e.Rank, file))
	if err != nil {
		return nil, fmt.Errorf("ckpt: create %s: %w", file, err)
	}
	f := &File{name: file, w: newHashingWriter(w)}
	c.files = append(c.files, f)
	return f, nil
}

// privateDir is the mode of the directories Path makes, the local
// backend's DirMode: a job's cache is its user's only, whatever
// the umask.
const privateDir = 0o700

// Path routes a file the application writes itself, SCR style: it returns
// the path in the node's cache where the application must write file
// before Commit, which then hashes it and takes from it any permission
// beyond its user (the application chose the mode it was created with).
// It needs a cache on a file system.
func (c *Checkpoint) Path(file string) (string, error) {
	loc, ok := storage.As[storage.Locator](c.e.Cache)
	if !ok {
		return "", fmt.Errorf("ckpt: the cache is not a directory: write %q with Create", file)
	}
	if err := c.addFile(file); err != nil {
		return "", err
	}
	p, ok := loc.Path(cachetier.FileObject(c.name, c.e.Rank, file))
	if !ok {
		return "", fmt.Errorf("ckpt: no path for %q", file)
	}
	if err := os.MkdirAll(p[:strings.LastIndexByte(p, '/')], privateDir); err != nil {
		return "", fmt.Errorf("ckpt: %w", err)
	}
	c.files = append(c.files, &File{name: file, routed: true, path: p})
	return p, nil
}

func (f *File) Write(p []byte) (int, error) {
	if f.closed {
		return 0, fmt.Errorf("ckpt: write to closed file %q", f.name)
	}
	var n int
	var err error
	if f.z != nil {
		n, err = f.z.write(f.w, p)
	} else {
		n, err = f.w.Write(p)
	}
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}

// abort discards the file: its compressor's streams end (an s2 writer
// holds a goroutine until closed), then the object.
func (f *File) abort() {
	if f.z != nil {
		f.z.discard()
	}
	f.w.Abort()
}

// Close makes the file durable in the cache.
func (f *File) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if f.err != nil {
		f.abort()
		return f.err
	}
	if f.z == nil {
		f.size, f.hash = f.w.n, f.w.h.Sum128()
	} else {
		var err error
		if f.size, f.hash, err = f.z.finish(f.w); err != nil {
			f.err = fmt.Errorf("ckpt: %s: %w", f.name, err)
			f.abort()
			return f.err
		}
		if f.form = f.z.form; f.form.Compressed() {
			f.stored, f.storedHash = f.w.n, f.w.h.Sum128()
		}
	}
	if err := f.w.Commit(); err != nil {
		f.err = fmt.Errorf("ckpt: %s: %w", f.name, err)
	}
	return f.err
}

// commitMsg is what every rank sends in rounds 1 and 2 of Commit.
type commitMsg struct {
	Err     string          `json:"err,omitempty"`
	Part    manifest.Part   `json:"part"`
	Domain  string          `json:"domain,omitempty"`
	NextID  uint64          `json:"next_id"`
	Created time.Time       `json:"created"`
	Parity  []manifest.File `json:"parity,omitempty"`
}

// Commit makes the checkpoint complete on every rank: it is collective.
// Each rank's files are hashed, the redundancy sets encode their parity
// across nodes, and once every rank's data and parity are durable each
// node writes the manifest, the commit marker. If any rank fails, every
// rank returns an error and the checkpoint does not exist (the previous
// one stays current).
func (c *Checkpoint) Commit(ctx context.Context) error {
	if c.done {
		return fmt.Errorf("ckpt: checkpoint %q is already committed or aborted", c.name)
	}
	c.done = true
	e := c.e
	e.epoch++
	epoch := e.epoch

	// Round 1: every rank sends its part (files, sizes, hashes), its node
	// and failure domain, and the ID it proposes (past any it has seen),
	// so that all can derive the same sets and the same ID.
	msg := commitMsg{Part: manifest.Part{Rank: e.Rank, Node: e.Node}, Domain: e.Domain, Created: time.Now().UTC()}
	if c.failed != nil {
		msg.Err = ErrString(c.failed)
	} else {
		msg.Err = ErrString(c.collectFiles(ctx, &msg.Part))
	}
	msg.NextID = e.lastID + 1 // the restored checkpoint may live only on the shared tier
	if ms, _, err := cachetier.ScanWith(ctx, e.Cache, e.decodeMemo); err == nil {
		e.pruneMemo(ms)
		if len(ms) > 0 {
			msg.NextID = max(msg.NextID, ms[0].ID+1)
		}
	}
	all, err := GatherJSON(ctx, e.Comm, msg)
	if err != nil {
		return c.fail(ctx, err)
	}
	if err := firstError(all, func(m commitMsg) string { return m.Err }); err != nil {
		return c.failTogether(ctx, err)
	}

	// Every rank derives the same sets and metadata from the same parts.
	meta, sets, err := e.planCommit(c.name, all)
	if err != nil {
		return c.failTogether(ctx, err) // every rank planned from the same parts
	}
	parts := make([]manifest.Part, len(all))
	for i, m := range all {
		parts[i] = m.Part
	}
	for si, set := range sets {
		for mi, r := range set {
			parts[r].Set, parts[r].Member = si, mi
		}
	}

	// The members of each set exchange blocks over the set's transport
	// (redundancy.Encode) and each writes its parity.
	mine := parts[e.Rank]
	parity, encErr := e.encode(ctx, c.name, epoch, meta, sets[mine.Set], mine.Member, parts)

	// Round 2: every rank sends its parity file's size and hash (or why
	// encoding failed), which go into every node's manifest.
	reply := commitMsg{Err: ErrString(encErr), Parity: parity}
	all2, err := GatherJSON(ctx, e.Comm, reply)
	if err != nil {
		return c.fail(ctx, err)
	}
	if err := firstError(all2, func(m commitMsg) string { return m.Err }); err != nil {
		return c.failTogether(ctx, err)
	}
	for r, m := range all2 {
		parts[r].Parity = m.Parity
	}

	// Every rank's data and parity are durable: each writes the marker
	// into its node's cache (ranks of one node write the same bytes).
	man, err := manifest.Merge(parts, meta)
	if err != nil {
		return c.fail(ctx, err)
	}
	text, err := manifest.Encode(man)
	if err == nil {
		_, err = storage.Save(ctx, e.Cache, cachetier.ManifestObject(c.name), strings.NewReader(string(text)))
	}
	// Round 3: every rank votes whether its node's marker is written; the
	// checkpoint counts only if all are, else every rank removes its part.
	ok, gerr := group.AllAgree(ctx, e.Comm, err == nil)
	if (gerr != nil || !ok) && err == nil {
		// This node's marker is written but the checkpoint does not exist:
		// remove it first, or listings would show a checkpoint whose parts
		// are gone (ranks of one node remove the same object; a second
		// removal finds nothing, which is fine).
		e.Cache.Remove(context.WithoutCancel(ctx), cachetier.ManifestObject(c.name))
	}
	switch {
	case gerr != nil:
		return c.fail(ctx, gerr)
	case !ok:
		if err == nil {
			err = errors.New("another node could not write the manifest")
		}
		return c.failTogether(ctx, err)
	}
	e.lastID = meta.ID
	// Retention: the ranks decide together (retain.go); the lowest rank
	// of each node tidies that node's cache.
	if e.KeepCache > 0 {
		e.remember(text, man) // what it decodes to, without decoding it
		if err := e.retainCache(ctx, man); err != nil {
			return fmt.Errorf("ckpt: committed %q, but removing older checkpoints failed: %w", c.name, err)
		}
	}
	return nil
}

// LowestRankOn is the lowest rank of m on node, which acts for the node
// (retention, announcing a flush); -1 if m has none there.
func LowestRankOn(m *manifest.Manifest, node string) int {
	for _, p := range m.Parts {
		if p.Node == node {
			return p.Rank
		}
	}
	return -1
}

func (c *Checkpoint) collectFiles(ctx context.Context, part *manifest.Part) error {
	for _, f := range c.files {
		if f.routed {
			if err := ownerOnly(f.path); err != nil {
				return fmt.Errorf("routed file %q: %w", f.name, err)
			}
			name := cachetier.FileObject(c.name, c.e.Rank, f.name)
			r, err := c.e.Cache.Open(ctx, name, 0, -1)
			if err != nil {
				return fmt.Errorf("routed file %q: %w", f.name, err)
			}
			// A cache that syncs its own files must have the
			// application's synced as well: written back while it is
			// hashed, then waited for.
			sync := storage.PropertiesOf(c.e.Cache).SyncsFiles
			var synced <-chan error
			if sync {
				synced = syncRouted(f.path)
			}
			f.hash, f.size, err = manifest.HashContent(r)
			r.Close()
			if sync {
				err = errors.Join(err, <-synced)
			}
			if err != nil {
				return fmt.Errorf("routed file %q: %w", f.name, err)
			}
		} else if !f.closed {
			return fmt.Errorf("file %q is not closed", f.name)
		} else if f.err != nil {
			return f.err
		}
		part.Files = append(part.Files, manifest.File{Rank: c.e.Rank, Name: f.name, Size: f.size, Hash: f.hash,
			Codec: f.form.Codec, Filter: f.form.Filter, StoredSize: f.stored, StoredHash: f.storedHash})
	}
	return nil
}

// ownerOnly takes from the file at path any permission of its group and
// others: the checkpoint's copy of a routed file is as private as the
// files the cache writes itself. A file the application never wrote is
// left for the cache's Open to report, as a missing object.
func ownerOnly(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return os.Chmod(path, perm&^0o077)
	}
	return nil
}

// planCommit chooses the redundancy sets and the manifest's metadata from
// what every rank sent; it is deterministic, so all ranks agree.
func (e *Engine) planCommit(name string, all []commitMsg) (manifest.Meta, [][]int, error) {
	members := make([]placement.Member, len(all))
	var id uint64
	for r, m := range all {
		members[r] = placement.Member{Rank: r, Node: m.Part.Node, Domain: m.Domain}
		id = max(id, m.NextID)
	}
	scheme, err := e.schemeFor(members)
	if err != nil {
		return manifest.Meta{}, nil, configError(err)
	}
	sets, err := placement.FormSets(members, scheme.SetSize())
	if err != nil {
		// The same members would form no sets at the next launch either.
		return manifest.Meta{}, nil, configError(fmt.Errorf("redundancy %s: %w", scheme, err))
	}
	meta := manifest.Meta{Name: name, ID: id, Created: all[0].Created, Ranks: len(all), Scheme: scheme.String(),
		SetSize: scheme.SetSize(), M: scheme.Parity, Sets: sets, Level: manifest.LevelCache}
	return meta, sets, nil
}

// schemeFor is the configured scheme, or the default for these members:
// single on one failure domain, else XOR over up to 8 domains.
func (e *Engine) schemeFor(members []placement.Member) (redundancy.Scheme, error) {
	if e.Scheme != "" {
		return redundancy.ParseScheme(e.Scheme)
	}
	domains := map[string]bool{}
	for _, m := range members {
		domains[m.FailureDomain()] = true
	}
	if len(domains) < 2 {
		return redundancy.Single(), nil
	}
	return redundancy.XOR(min(8, len(domains)))
}

// encode computes this rank's parity for its set and returns the parity
// file's entry (none for a scheme without parity).
func (e *Engine) encode(ctx context.Context, name string, epoch uint64, meta manifest.Meta, set []int, me int, parts []manifest.Part) ([]manifest.File, error) {
	if meta.M == 0 {
		return nil, nil
	}
	layout, err := redundancy.NewLayout(len(set), meta.M)
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, len(set))
	for i, r := range set {
		sizes[i] = dataSize(parts[r])
	}
	tr, closer, err := e.Comm.SetTransport(ctx, set, epoch)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	w, err := e.Cache.Create(ctx, cachetier.ParityObject(name, e.Rank))
	if err != nil {
		return nil, err
	}
	hw := newHashingWriter(w)
	data := e.dataReader(ctx, name, parts[e.Rank])
	defer data.Close()
	if err := redundancy.Encode(ctx, layout, me, tr, data, sizes[me], slices.Max(sizes), hw, e.blockOpts()...); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	return []manifest.File{{Rank: e.Rank, Name: parityName, Size: hw.n, Hash: hw.h.Sum128()}}, nil
}

func (e *Engine) blockOpts() []redundancy.Option {
	if e.BlockSize > 0 {
		return []redundancy.Option{redundancy.WithBlockSize(e.BlockSize)}
	}
	return nil
}

// dataSize is the length of a rank's data: its files' objects (stored
// forms) concatenated.
func dataSize(p manifest.Part) int64 {
	var n int64
	for _, f := range p.Files {
		size, _ := f.Stored()
		n += size
	}
	return n
}

func (e *Engine) dataReader(ctx context.Context, name string, p manifest.Part) *objectsReaderAt {
	r := &objectsReaderAt{ctx: ctx, b: e.Cache}
	for _, f := range p.Files {
		size, _ := f.Stored()
		r.names = append(r.names, cachetier.FileObject(name, p.Rank, f.Name))
		r.sizes = append(r.sizes, size)
	}
	return r
}

// fail removes what this rank wrote for the checkpoint and returns err.
func (c *Checkpoint) fail(ctx context.Context, err error) error {
	cachetier.RemovePart(context.WithoutCancel(ctx), c.e.Cache, c.name, c.e.Rank)
	return fmt.Errorf("ckpt: commit %q: %w", c.name, err)
}

// failTogether is fail for a failure every rank learned in the same
// round: its error wraps ErrCheckpointFailed.
func (c *Checkpoint) failTogether(ctx context.Context, err error) error {
	return c.fail(ctx, fmt.Errorf("%w: %w", ErrCheckpointFailed, err))
}

// Fail is Commit for a rank that could not write its part (its disk is
// full, the application's save failed): it takes part in Commit's
// collective rounds with err, so that every rank's Commit fails at once
// and the previous checkpoint stays current, and the job can go on; a
// rank that only aborted would leave the others waiting in Commit. It
// returns err once the other ranks were told.
func (c *Checkpoint) Fail(ctx context.Context, err error) error {
	for _, f := range c.files {
		if !f.closed && !f.routed {
			f.closed = true
			f.abort()
		}
	}
	c.failed = err
	// Commit fails: round 1 carries err to every rank. Once it did, the
	// ranks agree and the job may go on (ErrCheckpointFailed).
	if cerr := c.Commit(ctx); errors.Is(cerr, ErrCheckpointFailed) {
		return fmt.Errorf("%w: %w", ErrCheckpointFailed, err)
	}
	return err
}

// Abort discards the checkpoint on this rank.
func (c *Checkpoint) Abort() error {
	c.done = true
	for _, f := range c.files {
		if !f.closed && !f.routed {
			f.closed = true
			f.abort()
		}
	}
	cachetier.RemovePart(context.Background(), c.e.Cache, c.name, c.e.Rank)
	return nil
}
