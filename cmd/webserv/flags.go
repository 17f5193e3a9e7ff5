package main

import (
	"flag"
	"strings"
)

// parseArgs parses args with fs as fs.Parse does, but takes flags wherever
// they stand: `webserv export DIR --format transitions` sets the format
// instead of reading "--format" as a path (Go's flag package stops at the
// first positional argument). Positional arguments keep their order and
// are fs.Args() afterwards; everything after "--" is positional; "-" alone
// is positional (standard input). A flag fs does not define is still
// refused by fs.Parse, naming it.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		// A flag that takes a value takes the next argument as it.
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return fs.Parse(append(append(flags, "--"), positional...))
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
