// Command gen writes the hub guard's default objects (hubpolicy.Build(DefaultName, Default()))
// as YAML to the file named by its one argument; `make manifests` runs it for the spoke chart.
package main

import (
	"fmt"
	"os"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen <output file>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	objs, err := hubpolicy.Build(hubpolicy.DefaultName, hubpolicy.Default())
	if err != nil {
		return err
	}
	data, err := hubpolicy.YAML(objs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the hub policy: %w", err)
	}
	return nil
}
