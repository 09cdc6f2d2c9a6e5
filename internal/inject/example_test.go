package inject_test

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/inject"
)

func Example() {
	cfg, err := inject.ParseFlags("1m", "weibull:0.7", "node", 1)
	if err != nil {
		panic(err)
	}
	s, err := inject.NewSchedule(cfg)
	if err != nil {
		panic(err)
	}
	for range 3 {
		e := s.Next(4) // 4 live nodes
		fmt.Printf("at %.1fs kill node %d\n", e.At.Seconds(), e.Target)
	}
	_, err = inject.ParseDist("weibull:-1")
	fmt.Println(err)
	// Output:
	// at 339.2s kill node 1
	// at 339.4s kill node 0
	// at 339.7s kill node 0
	// invalid --inject-dist "weibull:-1": the Weibull shape must be a finite number > 0, not -1
}
