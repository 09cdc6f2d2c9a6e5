package figures

import (
	"fmt"
	"testing"
	"time"
)

func TestScratch(t *testing.T) {
	t0 := time.Now()
	last := t0
	lastName := ""
	paths, err := WriteAll("/tmp/figs", func(name string) {
		if lastName != "" {
			fmt.Println(lastName, time.Since(last))
		}
		lastName, last = name, time.Now()
	})
	fmt.Println(lastName, time.Since(last))
	fmt.Println("total", time.Since(t0), len(paths), err)
}
