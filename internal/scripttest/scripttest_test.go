package scripttest

import (
	"fmt"
	"strings"
	"testing"
)

// TestRun runs testdata/echo.txt: a bare key, a value, a list and an empty
// list come through as written, and empty output reads as "ok".
func TestRun(t *testing.T) {
	Run(t, func(t *testing.T) func(*Command) string {
		return func(c *Command) string {
			if c.Name == "quiet" {
				return ""
			}
			if !c.Has("list") || c.Has("missing") {
				t.Errorf("%s: Has is wrong", c.Pos)
			}
			var b strings.Builder
			for _, a := range c.Args {
				if a.Vals == nil {
					fmt.Fprintf(&b, "%s: bare\n", a.Key)
					continue
				}
				fmt.Fprintf(&b, "%s: %v\n", a.Key, a.Vals)
			}
			return b.String()
		}
	})
}
