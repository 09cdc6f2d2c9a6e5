package jobenv

import (
	"strings"
)

// Markers around the table in docs/RUNTIME.md that Markdown generates.
const (
	DocBegin = "<!-- begin jobenv table: generated from internal/jobenv.Vars (go test ./internal/jobenv -update) -->"
	DocEnd   = "<!-- end jobenv table -->"
)

// Markdown is the table of Vars for docs/RUNTIME.md, between DocBegin and
// DocEnd.
func Markdown() string {
	var b strings.Builder
	b.WriteString(DocBegin + "\n")
	b.WriteString("| variable | meaning | set by | default |\n|---|---|---|---|\n")
	row := func(v Var) {
		cells := []string{"`" + v.Name + "`", v.Meaning, v.SetBy, v.Default}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for _, v := range Vars {
		if v.Contract {
			row(v)
		}
	}
	b.WriteString("\nRead by ckpt, not passed by a launcher:\n\n| variable | meaning | set by | default |\n|---|---|---|---|\n")
	for _, v := range Vars {
		if !v.Contract {
			row(v)
		}
	}
	b.WriteString(DocEnd)
	return b.String()
}
