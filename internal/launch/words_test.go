package launch

import (
	"slices"
	"testing"
)

func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  --bind-to none  ", []string{"--bind-to", "none"}},
		{`--mca btl 'self,vader' -x "A=b c"`, []string{"--mca", "btl", "self,vader", "-x", "A=b c"}},
		{`a\ b "x\"y\\z\n" '' c`, []string{"a b", `x"y\z\n`, "", "c"}},
		{`pre'quoted'post`, []string{"prequotedpost"}},
	} {
		got, err := SplitWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`'open`, `"open`, `end\`} {
		if _, err := SplitWords(bad); err == nil {
			t.Errorf("SplitWords(%q) passed", bad)
		}
	}
}
