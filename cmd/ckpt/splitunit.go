package main

import (
	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
)

// splitUnit finds a quantity flag given a bare number followed by a unit
// as a separate argument, "--inject-mtti 3 seconds": the shell split the
// value from its unit, the flag took the number, and the unit became a
// positional argument — for ckpt run, the program to launch. Arguments
// after "--" are the user's own (a program may be called "s") and are not
// looked at. kindOf names a flag's kind ("duration", "size", "bandwidth",
// or "" for other flags).
func splitUnit(args []string, kindOf func(name string) string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[:2] != "--" {
			continue
		}
		name, value, attached := a[2:], "", false
		for j := 0; j < len(name); j++ {
			if name[j] == '=' {
				name, value, attached = name[:j], name[j+1:], true
				break
			}
		}
		kind := kindOf(name)
		if kind == "" {
			continue
		}
		next := i + 1
		if !attached {
			if next >= len(args) || (len(args[next]) > 1 && args[next][:2] == "--") {
				continue // no value: the flag reports it
			}
			value = args[next]
			next++
		}
		i = next - 1
		if next >= len(args) {
			return nil
		}
		if _, err := units.ParseFloat(value); err != nil {
			continue // the value has its unit, or is wrong in another way the flag reports
		}
		if unit, ok := units.Unit(kind, args[next]); ok {
			return usagef("--%s %s %s: write --%s %s%s (a value and its unit are one argument)", name, value, args[next], name, value, unit)
		}
	}
	return nil
}

// checkSplitUnit applies splitUnit to a command line, with the flags of the
// command it runs. Help wins over it, as over any bad input.
func checkSplitUnit(root *cobra.Command, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--help" || a == "-h" {
			return nil
		}
	}
	c, _, err := root.Find(args)
	if err != nil {
		return nil // cobra reports it
	}
	return splitUnit(args, func(name string) string {
		f := c.Flags().Lookup(name)
		if f == nil {
			return ""
		}
		switch k := f.Value.Type(); k {
		case "duration", "size", "bandwidth":
			return k
		}
		return ""
	})
}
