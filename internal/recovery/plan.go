package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Action is what a Plan asks the driver to do.
type Action uint8

const (
	// None: no candidate can be recovered; Plan.Skipped says why for each.
	None Action = iota
	// Verify: check every rank's cached files of the named checkpoint
	// (fill its Checkpoint.Held) and decide again.
	Verify
	// UseCache: every rank's files are intact in the cache of the node it
	// runs on; nothing to rebuild.
	UseCache
	// Rebuild: rebuild the lost members listed in Plan.Rebuild from the
	// redundancy of their sets, then verify them.
	Rebuild
	// Fetch: fetch every rank's files from the shared tier, verify them,
	// then encode the parity again if Plan.Reprotect.
	Fetch
)

func (a Action) String() string {
	switch a {
	case None:
		return "none"
	case Verify:
		return "verify"
	case UseCache:
		return "use-cache"
	case Rebuild:
		return "rebuild"
	case Fetch:
		return "fetch"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Plan is the planner's decision.
type Plan struct {
	Action Action
	// The checkpoint to verify (Verify) or to restart from (UseCache,
	// Rebuild, Fetch); empty for None.
	Name   string
	ID     uint64
	Scheme string
	// Sets with lost members, in set order (Rebuild only). Every member of
	// such a set takes part in its rebuild; sets with no lost member do
	// nothing.
	Rebuild []SetRebuild
	// Rebuilt lists, ascending, the ranks whose files do not come from the
	// cache as it is: the lost ranks (Rebuild) or every rank (Fetch).
	Rebuilt []int
	// Reprotect: after a Fetch, the sets encode their parity again (the
	// scheme has parity, M > 0).
	Reprotect bool
	// WriteManifest lists, sorted, the nodes of the job whose cache holds
	// no valid manifest of the checkpoint: the driver writes it there once
	// the files are in place (UseCache, Rebuild, Fetch).
	WriteManifest []string
	// Skipped lists the newer candidates passed over, newest first, with
	// the reason for each; for None, every candidate.
	Skipped []Skip
	// CacheWhy (Fetch only) is why the caches could not give the chosen
	// checkpoint back (rules 3, 8 and 12), worded as in a skip reason: a
	// tool that reports how a checkpoint is recovered says why not from
	// the caches.
	CacheWhy string
}

// SetRebuild is one redundancy set whose lost members are rebuilt.
type SetRebuild struct {
	Set       int      // index in the checkpoint's Sets
	Ranks     []int    // the set's members in set order (member i is Ranks[i])
	Lost      []Target // lost members, in set order
	Survivors []int    // the other members' ranks, in set order: they send their shards
}

// Target is a lost member and where it is rebuilt.
type Target struct {
	Rank   int
	Member int    // index in the set (redundancy.Rebuild's lost member)
	Node   string // node the rank runs on now: its rebuilt files go there
	Was    string // node that held its files at checkpoint time
}

// LostMembers returns the lost members of set (indices in the set, as
// redundancy.Rebuild takes them), ascending; nil if the set has none or the
// plan is no Rebuild. Every rank of the set calls it with its own set
// (manifest Part.Set) to learn whether it takes part in a rebuild.
func (p Plan) LostMembers(set int) []int {
	for _, sr := range p.Rebuild {
		if sr.Set != set {
			continue
		}
		out := make([]int, len(sr.Lost))
		for i, t := range sr.Lost {
			out[i] = t.Member
		}
		return out
	}
	return nil
}

// Skip is a candidate the plan passed over.
type Skip struct {
	Name   string
	ID     uint64
	Reason string
}

// Why is the reason for a None plan, for an error message: each skipped
// candidate with its reason; "" for any other plan.
func (p Plan) Why() string {
	if p.Action != None {
		return ""
	}
	if len(p.Skipped) == 0 {
		return "no checkpoint in any node's cache or on the shared tier"
	}
	var why []string
	for _, s := range p.Skipped {
		why = append(why, fmt.Sprintf("%s: %s", s.Name, s.Reason))
	}
	return strings.Join(why, "; ")
}

// Decide returns the plan for in: the newest candidate that can be
// recovered and how, or the step that must come first (Verify), or None.
// It is pure and deterministic: the result depends only on in, not on the
// order of its slices or maps. The decision rules are in the package
// documentation. A malformed Input gives an error wrapping ErrInvalid.
func Decide(in Input) (Plan, error) {
	if err := in.validate(); err != nil {
		return Plan{}, err
	}
	order := make([]*Checkpoint, len(in.Checkpoints))
	for i := range in.Checkpoints {
		order[i] = &in.Checkpoints[i]
	}
	// Rule 1: newest first; among equal IDs, by name.
	slices.SortFunc(order, func(a, b *Checkpoint) int {
		if c := cmp.Compare(b.ID, a.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	var skipped []Skip
	for _, c := range order {
		p, reason := decideOne(&in, c)
		if reason == "" {
			p.Name, p.ID, p.Scheme = c.Name, c.ID, c.Scheme
			p.Skipped = skipped
			if p.Action != Verify {
				p.WriteManifest = manifestless(&in, c) // rule 11
			}
			return p, nil
		}
		skipped = append(skipped, Skip{c.Name, c.ID, reason})
	}
	return Plan{Action: None, Skipped: skipped}, nil
}

// decideOne decides one candidate: a plan, or the reason it is skipped.
func decideOne(in *Input, c *Checkpoint) (Plan, string) {
	// Rule 2: a checkpoint of another job size is never tried.
	if c.Ranks != in.Ranks {
		return Plan{}, fmt.Sprintf("written by a job of %d ranks, this one has %d", c.Ranks, in.Ranks)
	}
	var failedCache, failedFetch string
	for _, f := range in.Failed {
		if f.Name != c.Name || f.ID != c.ID {
			continue
		}
		switch {
		case f.Action == Fetch && failedFetch == "":
			failedFetch = fmt.Sprintf("fetch from the shared tier failed: %s", f.Reason)
		case f.Action == Rebuild && failedCache == "":
			what := "rebuild"
			if c.Held != nil {
				if p, _ := fromCache(in, c); len(p.Rebuilt) > 0 {
					what = "rebuild of " + rankWord(p.Rebuilt)
				}
			}
			failedCache = fmt.Sprintf("%s failed: %s", what, f.Reason)
		case f.Action == UseCache && failedCache == "":
			failedCache = fmt.Sprintf("restart from the cache failed: %s", f.Reason)
		}
	}
	// Rules 3 and 12: the caches first, then the shared tier; an attempt
	// that failed rules its tier out.
	var reasons []string
	switch {
	case !c.inCache():
		reasons = append(reasons, "no node's cache holds its manifest")
	case failedCache != "":
		reasons = append(reasons, failedCache)
	case c.Held == nil:
		return Plan{Action: Verify}, "" // rule 4
	default:
		p, reason := fromCache(in, c)
		if reason == "" {
			return p, ""
		}
		reasons = append(reasons, reason)
	}
	switch {
	case c.Shared == nil:
		reasons = append(reasons, "no copy on the shared tier")
	case failedFetch != "":
		reasons = append(reasons, failedFetch)
	default:
		if reason := sharedProblem(c); reason != "" { // rule 10
			reasons = append(reasons, reason)
			break
		}
		all := make([]int, c.Ranks)
		for r := range all {
			all[r] = r
		}
		// reasons holds exactly the caches' reason here.
		return Plan{Action: Fetch, Rebuilt: all, Reprotect: c.M > 0, CacheWhy: strings.Join(reasons, "; ")}, "" // rule 9
	}
	return Plan{}, strings.Join(reasons, "; ")
}

// fromCache applies rules 5 to 8: use the cache, rebuild, or the reason
// the caches cannot give the checkpoint back.
func fromCache(in *Input, c *Checkpoint) (Plan, string) {
	p := Plan{Action: UseCache}
	for si, set := range c.Sets {
		sr := SetRebuild{Set: si, Ranks: slices.Clone(set)}
		for i, r := range set {
			if c.Held[r].ok() {
				sr.Survivors = append(sr.Survivors, r)
			} else {
				sr.Lost = append(sr.Lost, Target{Rank: r, Member: i, Node: in.Nodes[r], Was: c.Nodes[r]})
			}
		}
		if len(sr.Lost) > c.M {
			return Plan{}, tooMany(in, c, si, sr)
		}
		if len(sr.Lost) > 0 {
			p.Action = Rebuild
			p.Rebuild = append(p.Rebuild, sr)
			for _, t := range sr.Lost {
				p.Rebuilt = append(p.Rebuilt, t.Rank)
			}
		}
	}
	slices.Sort(p.Rebuilt)
	return p, ""
}

// tooMany says why set si cannot be rebuilt.
func tooMany(in *Input, c *Checkpoint, si int, sr SetRebuild) string {
	lost := make([]int, len(sr.Lost))
	var what []string
	for i, t := range sr.Lost {
		lost[i] = t.Rank
		what = append(what, describe(in, c, t.Rank))
	}
	tolerates := "none"
	if c.M > 0 {
		tolerates = fmt.Sprintf("at most %d", c.M)
	}
	return fmt.Sprintf("set %d (ranks %s) lost %s, %s rebuilds %s per set (%s)",
		si, ranks(sr.Ranks), rankWord(lost), c.Scheme, tolerates, strings.Join(what, "; "))
}

// describe says what is wrong with rank r's cached copy.
func describe(in *Input, c *Checkpoint, r int) string {
	h := c.Held[r]
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d on %s", r, in.Nodes[r])
	if was := c.Nodes[r]; was != in.Nodes[r] {
		if slices.Contains(in.Nodes, was) {
			fmt.Fprintf(&b, ", moved from %s", was)
		} else {
			fmt.Fprintf(&b, ", its node %s gone", was)
		}
	}
	b.WriteString(": ")
	switch {
	case h.Data == h.Parity:
		fmt.Fprintf(&b, "data and parity %v", h.Data)
	case h.Data == Intact:
		fmt.Fprintf(&b, "parity %v", h.Parity)
	case h.Parity == Intact:
		fmt.Fprintf(&b, "data %v", h.Data)
	default:
		fmt.Fprintf(&b, "data %v, parity %v", h.Data, h.Parity)
	}
	if h.Why != "" {
		fmt.Fprintf(&b, " (%s)", h.Why)
	}
	return b.String()
}

// sharedProblem is the reason a fetch cannot work, from the parts checked
// already; "" if none is known to be bad.
func sharedProblem(c *Checkpoint) string {
	var bad []string
	for r, st := range c.Shared.Parts {
		if st == Corrupt || st == Missing {
			bad = append(bad, fmt.Sprintf("rank %d %v", r, st))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "the shared tier's copy is incomplete: " + strings.Join(bad, ", ")
}

// manifestless lists the nodes of the job without a valid manifest of c.
func manifestless(in *Input, c *Checkpoint) []string {
	var out []string
	for _, n := range in.Nodes {
		if c.Manifests[n] != Intact && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func rankWord(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	return "ranks " + ranks(rs)
}

func ranks(rs []int) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprint(r)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// String renders the plan in a stable text form, one decision per line.
func (p Plan) String() string {
	var b strings.Builder
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "skip %s (id %d): %s\n", s.Name, s.ID, s.Reason)
	}
	what := fmt.Sprintf("%s (id %d)", p.Name, p.ID)
	switch p.Action {
	case None:
		if len(p.Skipped) == 0 {
			fmt.Fprintf(&b, "none: %s\n", p.Why())
		} else {
			b.WriteString("none: no candidate is recoverable\n")
		}
		return b.String()
	case Verify:
		fmt.Fprintf(&b, "verify %s: check every rank's cached files\n", what)
		return b.String()
	case UseCache:
		fmt.Fprintf(&b, "use-cache %s\n", what)
	case Rebuild:
		fmt.Fprintf(&b, "rebuild %s: %s\n", what, rankWord(p.Rebuilt))
		for _, sr := range p.Rebuild {
			for _, t := range sr.Lost {
				fmt.Fprintf(&b, "  set %d %s: member %d, rank %d → %s", sr.Set, ranks(sr.Ranks), t.Member, t.Rank, t.Node)
				if t.Was != t.Node {
					fmt.Fprintf(&b, " (was on %s)", t.Was)
				}
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "  set %d survivors %s\n", sr.Set, ranks(sr.Survivors))
		}
	case Fetch:
		fmt.Fprintf(&b, "fetch %s from the shared tier: %s", what, count(len(p.Rebuilt), "rank"))
		if p.Reprotect {
			fmt.Fprintf(&b, ", then reprotect %s", p.Scheme)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "%v %s\n", p.Action, what)
	}
	if len(p.WriteManifest) > 0 {
		fmt.Fprintf(&b, "  write manifest on %s\n", strings.Join(p.WriteManifest, " "))
	}
	return b.String()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
