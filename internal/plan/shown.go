package plan

import "fmt"

// Variant names what an alternative is apart from its failure domain: its
// scheme, levels, flush mode and whether it uses the shared tier.
// Alternatives of one variant differ only in where their sets are spread.
func (a *Alternative) Variant() string {
	scheme := "-"
	if a.Scheme != nil {
		scheme = a.Scheme.String()
	}
	return fmt.Sprintf("%s/%d/%v/%v", scheme, len(a.Levels), a.NonBlocking, a.SharedUnused)
}

// Shown picks the alternatives a summary lists, as indexes into
// r.Alternatives in their order (best first): every one if all, or else
// the first, best, of each Variant, and the recommended one. hidden counts
// those left out.
func (r Report) Shown(all bool) (shown []int, hidden int) {
	seen := map[string]bool{}
	for i := range r.Alternatives {
		a := &r.Alternatives[i]
		key := a.Variant()
		if !all && seen[key] && a != r.Recommended {
			hidden++
			continue
		}
		seen[key] = true
		shown = append(shown, i)
	}
	return shown, hidden
}
