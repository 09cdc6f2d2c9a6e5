package ckpt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// Where a restart found its checkpoint.
const (
	SourceCache   = "cache"   // every rank's files intact in its node's cache
	SourceRebuild = "rebuild" // lost or corrupt members rebuilt from redundancy
)

// Restored is the checkpoint Restart recovered, ready to be read.
type Restored struct {
	s       *Store
	m       *manifest.Manifest
	Source  string // SourceCache or SourceRebuild
	Rebuilt []int  // ranks whose files were rebuilt
	Skipped []Skip // newer candidates that could not be used, newest first
}

// Skip is a checkpoint Restart passed over, and why.
type Skip struct {
	Name   string
	ID     uint64
	Reason string
}

func (r *Restored) Name() string { return r.m.Name }
func (r *Restored) ID() uint64   { return r.m.ID }

// Files lists this rank's files in the order they were created.
func (r *Restored) Files() []string {
	var out []string
	for _, f := range r.m.Parts[r.s.rank].Files {
		if f.Name != messagesFile {
			out = append(out, f.Name)
		}
	}
	return out
}

// has reports whether this rank's part has the file.
func (r *Restored) has(file string) bool {
	for _, f := range r.m.Parts[r.s.rank].Files {
		if f.Name == file {
			return true
		}
	}
	return false
}

// Open reads one of this rank's files. Its content was verified by Restart;
// the reader checks the hash again as it goes and fails at the end if the
// file changed since.
func (r *Restored) Open(file string) (io.ReadCloser, error) {
	for _, f := range r.m.Parts[r.s.rank].Files {
		if f.Name != file {
			continue
		}
		rc, err := r.s.cache.Open(context.Background(), fileObject(r.m.Name, r.s.rank, f.Name), 0, -1)
		if err != nil {
			return nil, fmt.Errorf("ckpt: %w", err)
		}
		return struct {
			io.Reader
			io.Closer
		}{manifest.NewContentVerifyingReader(rc, file, f.Size, f.Hash), rc}, nil
	}
	return nil, fmt.Errorf("ckpt: checkpoint %q has no file %q for rank %d", r.m.Name, file, r.s.rank)
}

// Path is the cache path of one of this rank's files, for applications that
// read their files themselves.
func (r *Restored) Path(file string) (string, error) {
	loc, ok := storage.As[storage.Locator](r.s.cache)
	if !ok {
		return "", fmt.Errorf("ckpt: the cache is not a directory: read %q with Open", file)
	}
	p, ok := loc.Path(fileObject(r.m.Name, r.s.rank, file))
	if !ok {
		return "", fmt.Errorf("ckpt: no path for %q", file)
	}
	return p, nil
}

// Restart finds the newest checkpoint the job can recover and makes every
// rank's files ready: intact in the cache, or rebuilt from the redundancy
// of their sets after nodes were lost or files corrupted. Every byte is
// verified against the manifest's hashes before Restart returns; a
// checkpoint that cannot be verified is skipped for an older one, and the
// reasons are reported in Skipped. It is collective. With no recoverable
// checkpoint it returns an error wrapping ErrNoCheckpoint.
func (s *Store) Restart(ctx context.Context) (*Restored, error) {
	candidates, err := s.gatherCandidates(ctx)
	if err != nil {
		return nil, fmt.Errorf("ckpt: restart: %w", err)
	}
	var skipped []Skip
	for _, c := range candidates {
		m := c.any()
		if m.Ranks != s.size {
			skipped = append(skipped, Skip{m.Name, m.ID, fmt.Sprintf("written by a job of %d ranks, this one has %d", m.Ranks, s.size)})
			continue
		}
		var reasons []string
		for _, try := range []struct {
			m  *manifest.Manifest
			fn func(context.Context, *manifest.Manifest) (*Restored, string, error)
		}{{c.cache, s.tryRestore}, {c.shared, s.fetch}} {
			if try.m == nil {
				continue
			}
			res, reason, err := try.fn(ctx, try.m)
			if err != nil {
				return nil, fmt.Errorf("ckpt: restart from %q: %w", m.Name, err)
			}
			if reason == "" {
				res.Skipped = skipped
				s.lastID = m.ID
				return res, nil
			}
			reasons = append(reasons, reason)
		}
		skipped = append(skipped, Skip{m.Name, m.ID, strings.Join(reasons, "; then ")})
	}
	var why []string
	for _, sk := range skipped {
		why = append(why, fmt.Sprintf("%s: %s", sk.Name, sk.Reason))
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("ckpt: restart: %w: no checkpoint in any node's cache", ErrNoCheckpoint)
	}
	return nil, fmt.Errorf("ckpt: restart: %w (%s)", ErrNoCheckpoint, strings.Join(why, "; "))
}

// candidate is a checkpoint Restart may use, from the caches, the shared
// tier, or both.
type candidate struct {
	cache, shared *manifest.Manifest
}

func (c candidate) any() *manifest.Manifest {
	if c.cache != nil {
		return c.cache
	}
	return c.shared
}

// offer is what each rank knows of the checkpoints: the manifests of its
// node's cache and (rank 0) of the shared tier.
type offer struct {
	Cache  [][]byte `json:"cache,omitempty"`
	Shared [][]byte `json:"shared,omitempty"`
}

// gatherCandidates collects the manifests every node's cache holds, so that
// a rank whose node lost its cache still learns them, and those of the
// shared tier; newest first.
func (s *Store) gatherCandidates(ctx context.Context) ([]candidate, error) {
	var mine offer
	cached, err := s.cachedManifests(ctx)
	if err != nil {
		return nil, err
	}
	encode := func(ms []*manifest.Manifest) (out [][]byte) {
		for _, m := range ms {
			if b, err := manifest.Encode(m); err == nil {
				out = append(out, b)
			}
		}
		return out
	}
	mine.Cache = encode(cached)
	if s.rank == 0 && s.shared != nil {
		shared, err := sharedtier.List(ctx, s.shared)
		if err != nil {
			return nil, fmt.Errorf("list the shared tier: %w", err)
		}
		mine.Shared = encode(shared)
	}
	all, err := gatherJSON(ctx, s.comm, mine)
	if err != nil {
		return nil, err
	}
	type key struct {
		name string
		id   uint64
	}
	byKey := map[key]*candidate{}
	var keys []key
	add := func(b []byte, shared bool) {
		m, err := manifest.Decode(b)
		if err != nil {
			return
		}
		k := key{m.Name, m.ID}
		c := byKey[k]
		if c == nil {
			c = &candidate{}
			byKey[k] = c
			keys = append(keys, k)
		}
		if shared {
			c.shared = m
		} else if c.cache == nil {
			c.cache = m
		}
	}
	for _, o := range all {
		for _, b := range o.Cache {
			add(b, false)
		}
		for _, b := range o.Shared {
			add(b, true)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].id != keys[j].id {
			return keys[i].id > keys[j].id
		}
		return keys[i].name < keys[j].name
	})
	out := make([]candidate, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out, nil
}

// rankStatus is what every rank reports about a candidate.
type rankStatus struct {
	Intact bool   `json:"intact"`
	Why    string `json:"why,omitempty"`
}

// tryRestore verifies one candidate on every rank and rebuilds what its
// sets can. A non-empty reason means the candidate is unusable; err means
// the job itself failed.
func (s *Store) tryRestore(ctx context.Context, m *manifest.Manifest) (*Restored, string, error) {
	part := m.Parts[s.rank]
	verr := s.verifyPart(ctx, m.Name, part)
	status, err := gatherJSON(ctx, s.comm, rankStatus{Intact: verr == nil, Why: errString(verr)})
	if err != nil {
		return nil, "", err
	}
	var lost []int
	for r, st := range status {
		if !st.Intact {
			lost = append(lost, r)
		}
	}
	for si, set := range m.Sets {
		var setLost []int
		for _, r := range set {
			if !status[r].Intact {
				setLost = append(setLost, r)
			}
		}
		if len(setLost) > m.M {
			return nil, fmt.Sprintf("set %d (ranks %v) lost %s, more than the %d its %s redundancy rebuilds (rank %d: %s)",
				si, set, rankWord(setLost), m.M, m.Scheme, setLost[0], status[setLost[0]].Why), nil
		}
	}
	s.epoch++
	epoch := s.epoch
	res := &Restored{s: s, m: m, Source: SourceCache, Rebuilt: lost}
	if len(lost) > 0 {
		res.Source = SourceRebuild
		rerr := s.rebuild(ctx, m, epoch, status)
		if rerr == nil && !status[s.rank].Intact {
			rerr = s.verifyPart(ctx, m.Name, part)
		}
		reports, err := gatherJSON(ctx, s.comm, errString(rerr))
		if err != nil {
			return nil, "", err
		}
		if err := firstError(reports, func(e string) string { return e }); err != nil {
			return nil, fmt.Sprintf("rebuild of %s failed: %v", rankWord(lost), err), nil
		}
	}
	// Re-mark the checkpoint in this node's cache if it lost the marker.
	merr := s.ensureManifest(ctx, m)
	ok, err := group.AllAgree(ctx, s.comm, merr == nil)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "a node could not write the manifest back into its cache", nil
	}
	return res, "", nil
}

func rankWord(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	return fmt.Sprintf("ranks %v", ranks)
}

// verifyPart checks this rank's files and parity in the cache.
func (s *Store) verifyPart(ctx context.Context, name string, p manifest.Part) error {
	for _, f := range p.Files {
		if err := verifyObject(ctx, s.cache, fileObject(name, p.Rank, f.Name), f.Size, f.Hash); err != nil {
			return err
		}
	}
	for _, f := range p.Parity {
		if err := verifyObject(ctx, s.cache, parityObject(name, p.Rank), f.Size, f.Hash); err != nil {
			return err
		}
	}
	return nil
}

// rebuild restores the lost members of this rank's set, if it has any.
func (s *Store) rebuild(ctx context.Context, m *manifest.Manifest, epoch uint64, status []rankStatus) error {
	part := m.Parts[s.rank]
	set := m.Sets[part.Set]
	var lost []int
	for i, r := range set {
		if !status[r].Intact {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 || m.M == 0 {
		return nil
	}
	layout, err := redundancy.NewLayout(len(set), m.M)
	if err != nil {
		return err
	}
	sizes := make([]int64, len(set))
	for i, r := range set {
		sizes[i] = dataSize(m.Parts[r])
	}
	tr, closer, err := s.comm.SetTransport(ctx, set, epoch)
	if err != nil {
		return err
	}
	defer closer.Close()
	local := redundancy.Local{Size: sizes[part.Member]}
	if slices.Contains(lost, part.Member) {
		// A replacement: throw away what is left, write the rebuilt files.
		(&Checkpoint{s: s, name: m.Name}).removeLocal(ctx)
		out := &splitWriter{ctx: ctx, b: s.cache}
		for _, f := range part.Files {
			out.names = append(out.names, fileObject(m.Name, s.rank, f.Name))
			out.sizes = append(out.sizes, f.Size)
		}
		pw, err := s.cache.Create(ctx, parityObject(m.Name, s.rank))
		if err != nil {
			return err
		}
		local.DataOut, local.ParityOut = out, pw
		err = redundancy.Rebuild(ctx, layout, lost, part.Member, tr, local, slices.Max(sizes), s.blockOpts()...)
		if err == nil {
			err = out.Finish()
		}
		if err != nil {
			out.Abort()
			pw.Abort()
			return err
		}
		return pw.Commit()
	}
	local.Data = s.dataReader(ctx, m.Name, part)
	var paritySize int64
	for _, f := range part.Parity {
		paritySize += f.Size
	}
	local.Parity = &objectsReaderAt{ctx: ctx, b: s.cache, names: []string{parityObject(m.Name, s.rank)}, sizes: []int64{paritySize}}
	return redundancy.Rebuild(ctx, layout, lost, part.Member, tr, local, slices.Max(sizes), s.blockOpts()...)
}

// ensureManifest writes the manifest into this node's cache unless an
// identical one is there.
func (s *Store) ensureManifest(ctx context.Context, m *manifest.Manifest) error {
	text, err := manifest.Encode(m)
	if err != nil {
		return err
	}
	if have, err := storage.Load(ctx, s.cache, manifestObject(m.Name)); err == nil && bytes.Equal(have, text) {
		return nil
	}
	// Missing, unreadable or different (corrupt): write it.
	_, err = storage.Save(ctx, s.cache, manifestObject(m.Name), bytes.NewReader(text))
	return err
}
