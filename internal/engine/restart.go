package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/recovery"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// Source is where a restart found its checkpoint.
type Source string

// Where a restart found its checkpoint.
const (
	SourceCache   Source = "cache"   // every rank's files intact in its node's cache
	SourceRebuild Source = "rebuild" // lost or corrupt members rebuilt from redundancy
	SourceShared  Source = "shared"  // fetched back from the shared tier
)

// Restored is the checkpoint Restart recovered, ready to be read.
type Restored struct {
	m       *manifest.Manifest
	rank    int
	cache   storage.Backend
	Source  Source         // SourceCache, SourceRebuild or SourceShared
	Rebuilt []int          // ranks whose files were rebuilt or fetched
	Skipped []Skip         // newer candidates that could not be used, newest first
	seen    *verifiedFiles // files Restart verified, for Open
}

// Skip is a checkpoint Restart passed over, and why.
type Skip struct {
	Name   string
	ID     uint64
	Reason string
}

func (e *Engine) restored(m *manifest.Manifest, source Source, rebuilt []int) *Restored {
	return &Restored{m: m, rank: e.Rank, cache: e.Cache, Source: source, Rebuilt: rebuilt, seen: e.seen}
}

func (r *Restored) Name() string { return r.m.Name }
func (r *Restored) ID() uint64   { return r.m.ID }

// Files lists this rank's application files in the order they were
// created.
func (r *Restored) Files() []string {
	var out []string
	for _, f := range r.m.Parts[r.rank].Files {
		if f.Name != MessagesFile {
			out = append(out, f.Name)
		}
	}
	return out
}

// Has reports whether this rank's part has the file (reserved ones too).
func (r *Restored) Has(file string) bool {
	for _, f := range r.m.Parts[r.rank].Files {
		if f.Name == file {
			return true
		}
	}
	return false
}

// Open reads one of this rank's files, as the application wrote it (a
// file stored compressed is decompressed). Its content was verified by
// Restart, and the reader fails at its end if the file changed since: a
// file Restart hashed in a state it can recognise (stamp.go: same inode,
// size and times, not racily close to the verification) is read without
// hashing it again, its stamp checked at the open and at the end; any
// other (one rebuilt or fetched, which Restart hashed on its way into the
// cache, not as the cache returns it) is hashed as it is read.
func (r *Restored) Open(file string) (io.ReadCloser, error) {
	for _, f := range r.m.Parts[r.rank].Files {
		if f.Name != file {
			continue
		}
		obj := cachetier.FileObject(r.m.Name, r.rank, f.Name)
		if out := r.openVerified(obj, f); out != nil {
			return out, nil
		}
		rc, err := r.cache.Open(context.Background(), obj, 0, -1)
		if err != nil {
			return nil, fmt.Errorf("ckpt: %w", err)
		}
		out, err := openStored(rc, f, false)
		if err != nil {
			return nil, fmt.Errorf("ckpt: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("ckpt: checkpoint %q has no file %q for rank %d", r.m.Name, file, r.rank)
}

// openVerified opens object obj of file f without hashing its stored
// bytes, if Restart verified it and its stamp says it is the file it
// verified; else nil.
func (r *Restored) openVerified(obj string, f manifest.File) io.ReadCloser {
	loc, ok := storage.As[storage.Locator](r.cache)
	if !ok || r.seen == nil {
		return nil
	}
	p, ok := loc.Path(obj)
	if !ok {
		return nil
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil
	}
	_, hash := f.Stored()
	st, ok := r.seen.still(obj, fh, hash)
	if !ok {
		fh.Close()
		return nil
	}
	out, err := openStored(&stampedReader{f: fh, name: obj, want: st}, f, true)
	if err != nil {
		return nil // openStored closed it; the hashing path will say why
	}
	return out
}

// stampedReader reads a verified file and fails where it completes it (or
// ends early) if the file's stamp is no longer the one verified: the bytes
// read may then not be the verified ones. Like manifest.VerifyingReader,
// the read that finds the change returns no bytes.
type stampedReader struct {
	f    *os.File
	name string
	want fileStamp
	n    int64
	err  error
}

func (s *stampedReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.f.Read(p)
	s.n += int64(n)
	if s.n >= s.want.size || err != nil {
		if got, ok := stampOf(s.f); !ok || got != s.want {
			s.err = fmt.Errorf("%s: %w: the file changed after Restart verified it", s.name, manifest.ErrCorrupt)
			return 0, s.err
		}
		if s.n > s.want.size || (err == io.EOF && s.n < s.want.size) {
			s.err = fmt.Errorf("%s: %w: %d bytes read, %d verified", s.name, manifest.ErrCorrupt, s.n, s.want.size)
			return 0, s.err
		}
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

func (s *stampedReader) Close() error { return s.f.Close() }

// Path is the cache path of one of this rank's files. A file stored
// compressed has none that holds its bytes: read it with Open.
func (r *Restored) Path(file string) (string, error) {
	// Only a file of the manifest was verified by Restart: a path to any
	// other name would hand its reader bytes nobody checked.
	known := false
	for _, f := range r.m.Parts[r.rank].Files {
		if f.Name != file {
			continue
		}
		if f.Codec != "" {
			return "", fmt.Errorf("ckpt: %q is stored compressed (%s): read it with Open", file, compress.Form{Codec: f.Codec, Filter: f.Filter})
		}
		known = true
	}
	if !known {
		return "", fmt.Errorf("ckpt: checkpoint %q has no file %q for rank %d", r.m.Name, file, r.rank)
	}
	loc, ok := storage.As[storage.Locator](r.cache)
	if !ok {
		return "", fmt.Errorf("ckpt: the cache is not a directory: read %q with Open", file)
	}
	p, ok := loc.Path(cachetier.FileObject(r.m.Name, r.rank, file))
	if !ok {
		return "", fmt.Errorf("ckpt: no path for %q", file)
	}
	return p, nil
}

// Restart finds the newest checkpoint the job can recover and makes every
// rank's files ready: intact in the cache, rebuilt from the redundancy of
// their sets after nodes were lost or files corrupted, or fetched from the
// shared tier. Every byte is verified against the manifest's hashes before
// Restart returns; a checkpoint that cannot be verified is skipped for an
// older one, and the reasons are reported in Skipped. It is collective.
// With no recoverable checkpoint it returns an error wrapping
// ErrNoCheckpoint.
//
// The planner of internal/recovery decides (its package documentation has
// the rules); Restart is its driver: it gathers what the tiers hold, asks
// recovery.Decide, carries the plan out with tryRestore or fetch, and
// reports what failed back to the planner. Every rank builds the same
// planner input from the same gathered data, so every rank gets the same
// plan and takes part in the same rounds.
func (e *Engine) Restart(ctx context.Context) (*Restored, error) {
	e.seen = &verifiedFiles{}
	in, candidates, err := e.gatherCandidates(ctx)
	if err != nil {
		return nil, fmt.Errorf("ckpt: restart: %w", err)
	}
	// Each pass either fills one candidate's holdings (Verify) or records
	// one failed tier of one candidate, so the planner is done within
	// three passes per candidate; more means it repeats itself.
	quick := make([]bool, len(candidates)) // quickRebuild was tried
	for range 3*len(candidates) + 1 {
		p, err := recovery.Decide(in)
		if err != nil {
			// The input is built from decoded, valid manifests and the
			// ranks' reports: an error here is a bug of the engine.
			return nil, fmt.Errorf("ckpt: restart: planning: %w", err)
		}
		if p.Action == recovery.None {
			return nil, fmt.Errorf("ckpt: restart: %w (%s)", ErrNoCheckpoint, p.Why())
		}
		i := slices.IndexFunc(in.Checkpoints, func(c recovery.Checkpoint) bool { return c.Name == p.Name && c.ID == p.ID })
		c := candidates[i]
		var res *Restored
		var reason string
		switch p.Action {
		case recovery.Verify:
			// Recovery's rule 4: the caches are checked only when the
			// decision needs them. First by their sizes alone: if that
			// already calls for a rebuild, the survivors verify while the
			// rebuild runs (quickRebuild); otherwise, or if that fails,
			// every byte is hashed before the decision.
			if !quick[i] {
				quick[i] = true
				res, qp, _, err := e.quickRebuild(ctx, in, i, c.cache)
				if err != nil {
					return nil, fmt.Errorf("ckpt: restart from %q: %w", p.Name, err)
				}
				if res != nil {
					for _, sk := range qp.Skipped {
						res.Skipped = append(res.Skipped, Skip{sk.Name, sk.ID, sk.Reason})
					}
					e.lastID = qp.ID
					return res, nil
				}
			}
			held, err := e.gatherHeld(ctx, c.cache)
			if err != nil {
				return nil, fmt.Errorf("ckpt: restart from %q: %w", p.Name, err)
			}
			in.Checkpoints[i].Held = held
			continue
		case recovery.UseCache, recovery.Rebuild:
			res, reason, err = e.tryRestore(ctx, c.cache, p)
		case recovery.Fetch:
			res, reason, err = e.fetch(ctx, c.shared, p)
		default:
			return nil, fmt.Errorf("ckpt: restart: planning: unknown action %v", p.Action)
		}
		if err != nil {
			return nil, fmt.Errorf("ckpt: restart from %q: %w", p.Name, err)
		}
		if reason != "" {
			// Recovery's rule 12: the failure rules this tier out for this
			// candidate; the planner moves on and quotes the reason.
			in.Failed = append(in.Failed, recovery.Failure{Name: p.Name, ID: p.ID, Action: p.Action, Reason: reason})
			continue
		}
		for _, sk := range p.Skipped {
			res.Skipped = append(res.Skipped, Skip{sk.Name, sk.ID, sk.Reason})
		}
		e.lastID = p.ID
		return res, nil
	}
	return nil, fmt.Errorf("ckpt: restart: planning: no decision after %d passes", 3*len(candidates)+1)
}

// gatherCandidates collects the manifests every node's cache holds, so that
// a rank whose node lost its cache still learns them, and those of the
// shared tier, into the planner's input; candidates[i] is the input's
// Checkpoints[i].
func (e *Engine) gatherCandidates(ctx context.Context) (recovery.Input, []candidate, error) {
	mine := offer{Node: e.Node}
	cached, err := cachetier.List(ctx, e.Cache)
	if err != nil {
		return recovery.Input{}, nil, err
	}
	// known are the texts this rank offers and the manifests they encode,
	// which mergeOffers need not decode again.
	known := map[string]*manifest.Manifest{}
	encode := func(ms []*manifest.Manifest) (out [][]byte) {
		for _, m := range ms {
			if b, err := manifest.Encode(m); err == nil {
				out = append(out, b)
				known[string(b)] = m
			}
		}
		return out
	}
	mine.Cache = encode(cached)
	if e.Rank == 0 && e.Shared != nil {
		shared, err := sharedtier.List(ctx, e.Shared)
		if err != nil {
			return recovery.Input{}, nil, fmt.Errorf("list the shared tier: %w", err)
		}
		mine.Shared = encode(shared)
	}
	// Round 1 (once per restart): every rank sends its node and the
	// manifests its node's cache holds, and rank 0 those of the shared
	// tier, so that all ranks build the same planner input even when some
	// nodes lost their caches.
	all, err := gatherOffers(ctx, e.Comm, mine)
	if err != nil {
		return recovery.Input{}, nil, err
	}
	in, candidates := planInput(e.Size, all, manifest.Decode, known)
	if e.Eligible != nil {
		keep := 0
		for i, c := range in.Checkpoints {
			if e.Eligible(c.Name, c.ID) {
				in.Checkpoints[keep], candidates[keep] = c, candidates[i]
				keep++
			}
		}
		in.Checkpoints, candidates = in.Checkpoints[:keep], candidates[:keep]
	}
	return in, candidates, nil
}

// gatherHeld has every rank check its data files and parity of m in its
// node's cache, for the planner's Verify.
func (e *Engine) gatherHeld(ctx context.Context, m *manifest.Manifest) ([]recovery.Held, error) {
	held, _ := checkPart(ctx, e.Cache, m.Name, m.Parts[e.Rank], e.seen)
	// Round 2 (per candidate the planner asks to verify): every rank sends
	// what its node's cache holds of its files and parity, and if not
	// intact why, so that all know which members each set lost.
	return GatherJSON(ctx, e.Comm, held)
}

// quickRebuild is the first check of candidate i of in, m: every rank
// reports which of its files and parity exist with the manifest's sizes
// (sizePart), and if that calls for rebuilding m, the rebuild starts at
// once, every rank that rebuilds nothing hashing its part while the
// rebuild reads it: the verification of the survivors overlaps the
// rebuild instead of preceding it (issue 17). The outcome is the one the
// full check would have given: the rebuild's own files are hashed on their
// way out, and every other file of every rank is hashed before the ranks
// agree. A nil res without err means no such shortcut: the sizes call for
// no rebuild of m, or the rebuild or a verification failed; the caller
// then hashes every file and plans from that, with the caches as they
// were: what the attempt rebuilt is removed again. reason is why an
// attempted rebuild failed (the tests read it; the full check's plan
// says it again in its own terms).
func (e *Engine) quickRebuild(ctx context.Context, in recovery.Input, i int, m *manifest.Manifest) (res *Restored, p recovery.Plan, reason string, err error) {
	held, err := GatherJSON(ctx, e.Comm, sizePart(ctx, e.Cache, m.Name, m.Parts[e.Rank]))
	if err != nil {
		return nil, recovery.Plan{}, "", err
	}
	trial := in
	trial.Checkpoints = slices.Clone(in.Checkpoints)
	trial.Checkpoints[i].Held = held
	p, err = recovery.Decide(trial)
	if err != nil || p.Action != recovery.Rebuild || p.Name != m.Name || p.ID != m.ID {
		return nil, p, "", nil
	}
	res, reason, err = e.restore(ctx, m, p, true)
	if err != nil || reason != "" {
		return nil, p, reason, err
	}
	return res, p, "", nil
}

// sizePart checks what a node's cache holds of a rank's files of
// checkpoint name by their sizes alone, as CheckPart does by their hashes:
// a file missing is Missing, one of another size Corrupt, the rest
// presumed Intact.
func sizePart(ctx context.Context, cache storage.Backend, name string, p manifest.Part) recovery.Held {
	check := func(obj string, size int64) error {
		info, err := cache.Stat(ctx, obj)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", obj, err)
		case info.Size != size:
			return fmt.Errorf("%s: %w: %d bytes, the manifest says %d", obj, manifest.ErrCorrupt, info.Size, size)
		}
		return nil
	}
	var derr, perr error
	for _, f := range p.Files {
		size, _ := f.Stored()
		if derr = check(cachetier.FileObject(name, p.Rank, f.Name), size); derr != nil {
			break
		}
	}
	var paritySize int64
	for _, f := range p.Parity {
		paritySize += f.Size
	}
	if len(p.Parity) > 0 {
		perr = check(cachetier.ParityObject(name, p.Rank), paritySize)
	}
	err := derr
	if err == nil {
		err = perr
	}
	return recovery.Held{Data: recovery.StateOf(derr), Parity: recovery.StateOf(perr), Why: ErrString(err)}
}

// tryRestore carries out a UseCache or Rebuild plan: the lost members of
// every set in p.Rebuild are rebuilt and verified, and the manifest is
// written back where p.WriteManifest says. A non-empty reason means the
// attempt failed; err means the job itself failed.
func (e *Engine) tryRestore(ctx context.Context, m *manifest.Manifest, p recovery.Plan) (*Restored, string, error) {
	return e.restore(ctx, m, p, false)
}

// restore is tryRestore; with verify (quickRebuild's Rebuild plan, made
// before the caches were hashed) every rank that rebuilds nothing hashes
// its part while the rebuild runs, and a bad file fails the attempt.
func (e *Engine) restore(ctx context.Context, m *manifest.Manifest, p recovery.Plan, verify bool) (*Restored, string, error) {
	part := m.Parts[e.Rank]
	e.epoch++
	epoch := e.epoch
	res := e.restored(m, SourceCache, p.Rebuilt)
	if p.Action == recovery.Rebuild {
		res.Source = SourceRebuild
		rebuilt := slices.Contains(p.Rebuilt, e.Rank)
		lost := p.LostMembers(part.Set)
		var verified bool
		var rerr error
		if verify && !rebuilt && len(lost) == 0 {
			// A set that lost nothing: its ranks only verify.
			rerr = verifyPart(ctx, e.Cache, m.Name, part, e.seen)
		} else {
			// A survivor (with verify) hashes the blocks it reads for
			// the rebuild as they pass: it reads each byte once.
			verified, rerr = e.rebuild(ctx, m, epoch, lost, verify && !rebuilt)
		}
		if rerr == nil && !verified && rebuilt {
			rerr = VerifyPart(ctx, e.Cache, m.Name, part)
		}
		// Round 3 (after a rebuild): every rank sends whether its set's
		// rebuild, and the verification of what it rebuilt, succeeded.
		failed, err := e.reportAll(ctx, rerr)
		if err != nil {
			return nil, "", err
		}
		if failed != nil {
			if verify && rebuilt {
				// The full check that follows decides as if this attempt
				// had not been made, and reports the same ranks rebuilt:
				// what it rebuilt goes (as did the rank's bad files it
				// replaced: the check finds them missing).
				cachetier.RemovePart(context.WithoutCancel(ctx), e.Cache, m.Name, e.Rank)
			}
			return nil, failed.Error(), nil // the planner says which ranks
		}
	}
	merr := e.writeManifest(ctx, m, p)
	// Round 4: every rank votes whether its node holds the manifest
	// again; a node without it would not offer the checkpoint next time.
	ok, err := group.AllAgree(ctx, e.Comm, merr == nil)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "a node could not write the manifest back into its cache", nil
	}
	return res, "", nil
}

// writeManifest writes m into this rank's node's cache if the plan lists
// the node as lacking a valid copy (recovery's rule 11).
func (e *Engine) writeManifest(ctx context.Context, m *manifest.Manifest, p recovery.Plan) error {
	if !slices.Contains(p.WriteManifest, nodeName(e.Node, e.Rank)) {
		return nil
	}
	return e.ensureManifest(ctx, m)
}

// rebuild restores the lost members of this rank's set, lost as the plan
// gives them (Plan.LostMembers: indices in the set); a set with none does
// nothing. verified says that this rank checked every byte of its part
// against the manifest in the rebuild's pass: a replacement as it wrote
// them (so it needs no reading back; one without verified must verify
// what it wrote), a survivor with check as it read them for the rebuild.
//
// The work is a pipeline end to end (issue 17): the survivors read their
// blocks ahead of sending them (redundancy.Rebuild), each object opened
// once, and with check hash each block after it is sent, in a stage of its
// own (streamVerifier), so one read of each byte serves the rebuild and
// the verification; the replacement decodes while it writes, and hashes
// each file from the buffer it writes, committing a file only if its hash
// is the manifest's. A wrong byte is never restored: a mismatch fails the
// rebuild, and a failed rebuild leaves nothing of this rank's part; a
// survivor whose bytes do not match fails it too (after the pass: what it
// sent was rebuilt into files whose hashes fail on the replacement too).
func (e *Engine) rebuild(ctx context.Context, m *manifest.Manifest, epoch uint64, lost []int, check bool) (verified bool, err error) {
	part := m.Parts[e.Rank]
	set := m.Sets[part.Set]
	if len(lost) == 0 {
		return false, nil
	}
	layout, err := redundancy.NewLayout(len(set), m.M)
	if err != nil {
		return false, err
	}
	sizes := make([]int64, len(set))
	for i, r := range set {
		sizes[i] = dataSize(m.Parts[r])
	}
	tr, closer, err := e.Comm.SetTransport(ctx, set, epoch)
	if err != nil {
		return false, err
	}
	defer closer.Close()
	local := redundancy.Local{Size: sizes[part.Member]}
	var paritySize int64
	for _, f := range part.Parity {
		paritySize += f.Size
	}
	parity := []string{cachetier.ParityObject(m.Name, e.Rank)}
	if slices.Contains(lost, part.Member) {
		// A replacement: throw away what is left, write the rebuilt files.
		cachetier.RemovePart(ctx, e.Cache, m.Name, e.Rank)
		for _, f := range part.Files {
			e.seen.forget(cachetier.FileObject(m.Name, e.Rank, f.Name))
		}
		out := e.partWriter(ctx, m.Name, part)
		pout := &splitWriter{ctx: ctx, b: e.Cache, names: parity, sizes: []int64{paritySize}}
		// The parity is one object; a manifest that splits it otherwise
		// is checked by reading back (VerifyPart) instead.
		verified = len(part.Parity) == 1
		if verified {
			pout.hashes = []manifest.Hash{part.Parity[0].Hash}
		}
		local.DataOut, local.ParityOut = out, pout
		err = redundancy.Rebuild(ctx, layout, lost, part.Member, tr, local, slices.Max(sizes), e.blockOpts()...)
		if err == nil {
			err = out.Finish()
		}
		if err == nil {
			err = pout.Finish()
		}
		if err != nil {
			out.Abort()
			pout.Abort()
			// The files committed before the failure matched the
			// manifest, but the part is incomplete: nothing of it stays.
			cachetier.RemovePart(context.WithoutCancel(ctx), e.Cache, m.Name, e.Rank)
			return false, err
		}
		return verified, nil
	}
	data := e.dataReader(ctx, m.Name, part)
	defer data.Close()
	local.Data = data
	pr := &objectsReaderAt{ctx: ctx, b: e.Cache, names: parity, sizes: []int64{paritySize}}
	defer pr.Close()
	local.Parity = pr
	var dv, pv *streamVerifier
	at := time.Now()
	if check {
		var hashes []manifest.Hash
		for _, f := range part.Files {
			_, h := f.Stored()
			hashes = append(hashes, h)
		}
		dv = newStreamVerifier(data.names, data.sizes, hashes)
		if len(part.Parity) == 1 {
			pv = newStreamVerifier(parity, []int64{paritySize}, []manifest.Hash{part.Parity[0].Hash})
		}
		local.Seen = func(isParity bool, off int64, b []byte) {
			switch {
			case !isParity:
				dv.add(off, b)
			case pv != nil:
				pv.add(off, b)
			}
		}
	}
	if err := redundancy.Rebuild(ctx, layout, lost, part.Member, tr, local, slices.Max(sizes), e.blockOpts()...); err != nil || !check {
		return false, err
	}
	if err := dv.finish(ctx, data, e.Cache, e.seen, at); err != nil {
		return false, err
	}
	if pv != nil {
		err = pv.finish(ctx, pr, e.Cache, nil, at)
	} else if len(part.Parity) > 0 {
		// A parity split otherwise than as one object: read it again.
		pp := part
		pp.Files = nil
		err = VerifyPart(ctx, e.Cache, m.Name, pp)
	}
	return err == nil, err
}

// partWriter writes one stream back into the files of this rank's part,
// each checked against the manifest's hash before it is committed.
func (e *Engine) partWriter(ctx context.Context, name string, part manifest.Part) *splitWriter {
	out := &splitWriter{ctx: ctx, b: e.Cache}
	for _, f := range part.Files {
		size, hash := f.Stored() // a compressed file comes back compressed
		out.names = append(out.names, cachetier.FileObject(name, e.Rank, f.Name))
		out.sizes = append(out.sizes, size)
		out.hashes = append(out.hashes, hash)
	}
	return out
}

// ensureManifest writes the manifest into this node's cache unless an
// identical one is there.
func (e *Engine) ensureManifest(ctx context.Context, m *manifest.Manifest) error {
	text, err := manifest.Encode(m)
	if err != nil {
		return err
	}
	if have, err := storage.Load(ctx, e.Cache, cachetier.ManifestObject(m.Name)); err == nil && bytes.Equal(have, text) {
		return nil
	}
	// Missing, unreadable or different (corrupt): write it.
	_, err = storage.Save(ctx, e.Cache, cachetier.ManifestObject(m.Name), bytes.NewReader(text))
	return err
}
