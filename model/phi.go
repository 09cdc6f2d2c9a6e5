package model

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Phi is the inter-process dependency factor of 003 eq. 12,
//
//	φ = Σ_n P(n) / N²,
//
// where P(n) is the number of processes that depend on process n, itself
// included, and N the number of processes. Every P(n) must lie in [1, N], so
// φ lies in (0, 1].
func Phi(deps []int) (float64, error) {
	n := len(deps)
	if n == 0 {
		return 0, &ParamError{Param: "deps", Value: 0, Reason: "needs one entry P(n) per process"}
	}
	sum := 0.0
	for i, p := range deps {
		if p < 1 || p > n {
			return 0, &ParamError{Param: "deps", Value: float64(p), Reason: fmt.Sprintf("entry %d: P(n) counts the process itself and at most all %d processes, so it must lie in [1, %d]", i+1, n, n)}
		}
		sum += float64(p)
	}
	return sum / float64(n*n), nil
}

// DependencyGraph records who waits for whom: Waits[a] holds the processes
// that process a waits for (depends on). Processes are named by strings.
type DependencyGraph struct {
	Processes []string            // in order of first appearance
	Waits     map[string][]string // a → processes a waits for
}

// P returns P(n) for each process in Processes order: 1 (the process itself)
// plus the number of other processes that wait for it directly.
func (g DependencyGraph) P() []int {
	dependents := make(map[string]map[string]bool, len(g.Processes))
	for waiter, targets := range g.Waits {
		for _, t := range targets {
			if t == waiter {
				continue
			}
			if dependents[t] == nil {
				dependents[t] = map[string]bool{}
			}
			dependents[t][waiter] = true
		}
	}
	out := make([]int, len(g.Processes))
	for i, p := range g.Processes {
		out[i] = 1 + len(dependents[p])
	}
	return out
}

// Phi is the dependency factor of the graph.
func (g DependencyGraph) Phi() (float64, error) { return Phi(g.P()) }

// ParseDeps reads P(n) of each process written comma-separated ("3,1,2"),
// the --deps form of 'ckpt model phi' and 'ckpt simulate'. It checks only
// that each entry is a whole number; Phi checks the values.
func ParseDeps(s string) ([]int, error) {
	var p []int
	for i, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		n, err := strconv.Atoi(e)
		if err != nil {
			return nil, fmt.Errorf("element %d (%q) is not a whole number", i+1, e)
		}
		p = append(p, n)
	}
	return p, nil
}

// ParseDependencyGraph reads the graph file format:
//
//	# comments start with '#'; blank lines are ignored
//	master: w1 w2 w3    # master waits for w1, w2 and w3
//	w1: master          # w1 waits for master
//	w4:                 # a process that waits for nobody
//
// Each line names a process, a colon, and the processes it waits for,
// separated by spaces or commas. A process named only as a target is also a
// process. A process may appear on several lines; its targets accumulate.
// Dependence is direct, not transitive (003 §3.3: P(worker) = 2 for a
// master/worker job in which workers do not talk to each other).
func ParseDependencyGraph(r io.Reader) (DependencyGraph, error) {
	g := DependencyGraph{Waits: map[string][]string{}}
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			g.Processes = append(g.Processes, p)
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		head, tail, ok := strings.Cut(text, ":")
		if !ok {
			return g, fmt.Errorf("line %d: %q: expected \"PROCESS: TARGET ...\" (a process, a colon, the processes it waits for)", line, text)
		}
		waiter := strings.TrimSpace(head)
		if waiter == "" || strings.ContainsAny(waiter, " \t,") {
			return g, fmt.Errorf("line %d: %q: expected one process name before the colon", line, head)
		}
		add(waiter)
		for _, t := range strings.FieldsFunc(tail, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
			if strings.Contains(t, ":") {
				return g, fmt.Errorf("line %d: %q: one colon per line", line, t)
			}
			add(t)
			g.Waits[waiter] = append(g.Waits[waiter], t)
		}
	}
	if err := sc.Err(); err != nil {
		return g, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(g.Processes) == 0 {
		return g, fmt.Errorf("the graph names no process")
	}
	for _, targets := range g.Waits {
		sort.Strings(targets)
	}
	return g, nil
}
