package plan

import (
	"reflect"
	"testing"
)

// Shown keeps the best of each variant and the recommended one, unless
// asked for all; alternatives that differ in their domain only are one
// variant.
func TestShown(t *testing.T) {
	two := []Level{{Name: "L1"}, {Name: "shared"}}
	rep := Report{Alternatives: []Alternative{
		{Name: "a rack", Levels: two, Domain: Domain{Name: "rack"}},
		{Name: "b", Levels: two[:1]},
		{Name: "a node", Levels: two, Domain: Domain{Name: "node"}},
		{Name: "a nonblocking", Levels: two, NonBlocking: true},
		{Name: "a cabinet", Levels: two, Domain: Domain{Name: "cabinet"}},
	}}
	if rep.Alternatives[0].Variant() != rep.Alternatives[2].Variant() || rep.Alternatives[0].Variant() == rep.Alternatives[3].Variant() {
		t.Fatalf("variants %q %q %q", rep.Alternatives[0].Variant(), rep.Alternatives[2].Variant(), rep.Alternatives[3].Variant())
	}
	rep.Recommended = &rep.Alternatives[4]
	if shown, hidden := rep.Shown(false); !reflect.DeepEqual(shown, []int{0, 1, 3, 4}) || hidden != 1 {
		t.Errorf("Shown(false) = %v, %d hidden", shown, hidden)
	}
	if shown, hidden := rep.Shown(true); !reflect.DeepEqual(shown, []int{0, 1, 2, 3, 4}) || hidden != 0 {
		t.Errorf("Shown(true) = %v, %d hidden", shown, hidden)
	}
}
