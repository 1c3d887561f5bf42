// Command gen rewrites the generated part of shared/api/fleet/v1alpha1/README.md from the
// fleet.rayfleet.io CRDs in the charts; `make api-docs` runs it from the repository root.
package main

import (
	"fmt"
	"os"

	"github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1/internal/apidocs"
)

const readme = "shared/api/fleet/v1alpha1/README.md"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run() error {
	crds, err := apidocs.ReadCRDs("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds")
	if err != nil {
		return err
	}
	generated, err := apidocs.Render(crds)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	data, err := apidocs.Splice(old, generated)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, data, 0o644)
}
